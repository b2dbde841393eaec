"""Online diarization and refinement on real recordings (not the acceptance file)."""

import numpy as np

from _pipeline_support import components, eval_file, needs_eval
from voicekit.diarization.online import DiarizerOptions, snap_to_word_gaps
from voicekit.evaluation import load_reference, refined_view, score_der, turns_to_annotation
from voicekit.pipeline import Pipeline, PipelineOptions
from voicekit.sources import FileSource
from voicekit.turns import Word, speaker_label

pytestmark = needs_eval


def _run(file_id, **diarizer):
    f = eval_file(file_id)
    pipe = Pipeline(PipelineOptions(diarizer=DiarizerOptions(**diarizer)), components())
    result = pipe.run(FileSource(f.audio), refine=True)
    turns = result.turns
    ref, uem = load_reference(f, FileSource(f.audio).info.duration)
    return f, turns, refined_view([t.replace(turn_id=i) for i, t in enumerate(turns)],
                                  {i: v for i, v in enumerate(result.refined.values())}), ref, uem


def test_labels_in_order_of_first_appearance_without_gaps():
    for file_id in ("test", "diarizationExample"):
        _f, turns, _r, _ref, _uem = _run(file_id)
        order = list(dict.fromkeys(t.speaker for t in turns))
        assert order == [speaker_label(i) for i in range(len(order))], (file_id, order)
        assert all(w.speaker == t.speaker for t in turns for w in t.words)


def test_clean_three_speaker_recording_refined():
    f, turns, refined, ref, uem = _run("test")
    d_live = score_der(ref, turns_to_annotation(turns, f.file_id), uem, 0.5)
    d_ref = score_der(ref, turns_to_annotation(refined, f.file_id), uem, 0.5)
    print(f"falcon test: live {100 * d_live.der:.1f}% ({len({t.speaker for t in turns})} speakers), "
          f"refined {100 * d_ref.der:.1f}% ({len({t.speaker for t in refined})} speakers)")
    assert len({t.speaker for t in refined}) == 3
    assert d_ref.der < 0.05
    assert d_live.der < 0.2


def test_max_speakers_is_honoured():
    _f, turns, refined, _ref, _uem = _run("diarizationExample2", max_speakers=2)
    assert {t.speaker for t in turns} <= {"Speaker A", "Speaker B"}
    assert len({t.speaker for t in refined}) <= 2


def test_changes_snap_to_the_nearest_word_gap():
    words = [Word(0.0, 0.4, " a", 1), Word(0.6, 1.0, " b", 1), Word(2.0, 2.5, " c", 1)]
    assert snap_to_word_gaps([0.45, 1.9], words) == [0.5, 1.5]
    assert snap_to_word_gaps([0.45, 0.55], words) == [0.5]
    assert snap_to_word_gaps([1.0], words[:1]) == []

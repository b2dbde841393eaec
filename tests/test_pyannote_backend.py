"""The pyannote.audio backend (docs/pyannote.md), with randomly initialised checkpoints.

No pyannote weights can be downloaded here, so these tests build small checkpoints of pyannote's
own architectures (PyanNet segmentation; an x-vector embedding for the pipeline runs, cheap on two
cores, and a WeSpeaker ResNet34 as in community-1 for the loading check), saved the way pyannote
saves them, with a local config.yaml and PLDA (voicekit/diarization/pyannote_checkpoints.py), and
load them with the hub offline. They check the plumbing (loading, shapes, timings, the word
mapping, the CLI), not accuracy.
"""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest

from _pipeline_support import EVAL, SAMPLE, components, import_or_skip, needs_eval
from voicekit.diarization.pyannote_backend import (DEFAULT_PIPELINE, PyannoteOfflineDiarizer, SpeakerSegment,
                                                   assign_speakers, parse_diarizer, pieces_from_words)
from voicekit.turns import Word
from voicekit.vad import Utterance

pyannote_audio = import_or_skip("pyannote.audio", "VOICEKIT_REQUIRE_PYANNOTE", "sh scripts/install_pyannote.sh")

from voicekit.diarization.pyannote_checkpoints import write_random_pipeline  # noqa: E402


@pytest.fixture(scope="module")
def pipeline_dir(tmp_path_factory):
    from pyannote.audio.models.embedding import XVectorSincNet

    import torch

    torch.manual_seed(1)
    root = tmp_path_factory.mktemp("pyannote-xvector")
    write_random_pipeline(root, XVectorSincNet())
    return root


@pytest.fixture(scope="module")
def models(pipeline_dir):
    from voicekit.diarization.pyannote_backend import PyannoteModels

    return PyannoteModels(str(pipeline_dir))


def test_swapped_checkpoints_are_found_when_the_pipeline_loads(pipeline_dir, tmp_path):
    """A trial: segmentation and embedding checkpoints swapped in a pipeline folder loaded fine, then
    failed on the first utterance ("internal error: IndexError"), after --overwrite had replaced
    the meeting. One forward pass of each model at load finds it, with the fix."""
    import shutil

    from voicekit.diarization.pyannote_backend import PyannoteModels
    from voicekit.models import ModelError

    swapped = tmp_path / "swapped"
    shutil.copytree(pipeline_dir, swapped)
    seg, emb = swapped / "segmentation" / "pytorch_model.bin", swapped / "embedding" / "pytorch_model.bin"
    seg_bytes = seg.read_bytes()
    seg.write_bytes(emb.read_bytes())
    emb.write_bytes(seg_bytes)
    with pytest.raises(ModelError) as info:
        PyannoteModels(str(swapped))
    assert str(info.value).startswith(f"pyannote pipeline {str(swapped)!r} loads but its models do not run as a "
                                      "segmentation and an embedding model ("), info.value
    assert "name the right checkpoints (not swapped" in str(info.value)


def test_a_device_error_at_load_is_not_blamed_on_config_yaml(pipeline_dir, monkeypatch):
    """A review: the load-time check turned every error into "check that … config.yaml name the
    right checkpoints", a CUDA out-of-memory error too, where that advice is wrong."""
    import torch

    from voicekit.diarization.pyannote_backend import PyannoteModels

    def out_of_memory(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(PyannoteModels, "segment", out_of_memory)
    with pytest.raises(torch.cuda.OutOfMemoryError, match="CUDA out of memory"):
        PyannoteModels(str(pipeline_dir))


def test_a_checkpoint_file_bad_yaml_or_another_kind_of_checkpoint_gets_its_own_fix(pipeline_dir, tmp_path):
    """A trial: each of these got the advice about `plda` (a missing path taken for a hub name),
    which had nothing to do with it."""
    import shutil

    import torch

    from voicekit.diarization.pyannote_backend import PyannoteModels
    from voicekit.models import ModelError

    checkpoint = pipeline_dir / "segmentation" / "pytorch_model.bin"
    with pytest.raises(ModelError, match=rf"is a file: give the pipeline's folder, the one that holds config.yaml "
                                         rf"\(perhaps {re.escape(str(pipeline_dir))}\)"):
        PyannoteModels(str(checkpoint))
    bad_yaml = tmp_path / "yaml"
    shutil.copytree(pipeline_dir, bad_yaml)
    (bad_yaml / "config.yaml").write_text("pipeline: [unclosed\n  x: {\n", encoding="utf-8")
    with pytest.raises(ModelError, match=r"its config.yaml is not valid YAML \(ParserError: .*\); fix or fetch it"):
        PyannoteModels(str(bad_yaml))
    other = tmp_path / "other"
    shutil.copytree(pipeline_dir, other)
    torch.save({"state_dict": {}}, other / "segmentation" / "pytorch_model.bin")   # not a pyannote.audio model
    with pytest.raises(ModelError) as info:
        PyannoteModels(str(other))
    assert "is a PyTorch file but not a pyannote.audio model" in str(info.value) and "plda" not in str(info.value)


def test_a_cut_checkpoint_a_model_folder_and_uncached_hub_models_get_their_own_fix(pipeline_dir, tmp_path):
    """A review: a checkpoint cut short (torch's zip format), a model's folder given for a
    pipeline's, and a downloaded 3.1 folder whose hub-named models are not cached all got the
    advice about `plda`, which had nothing to do with them."""
    import shutil

    import yaml

    from voicekit.diarization.pyannote_backend import PyannoteModels
    from voicekit.models import ModelError

    cut = tmp_path / "cut"
    shutil.copytree(pipeline_dir, cut)
    checkpoint = cut / "segmentation" / "pytorch_model.bin"
    checkpoint.write_bytes(checkpoint.read_bytes()[:4096])
    with pytest.raises(ModelError) as info:
        PyannoteModels(str(cut))
    assert "is not a whole PyTorch checkpoint (damaged, cut short" in str(info.value) and "plda" not in str(info.value)
    model = tmp_path / "segmentation-3.0"
    model.mkdir()
    (model / "config.yaml").write_text("task: {duration: 10.0}\nmodel: {_target_: pyannote.audio.models.PyanNet}\n",
                                       encoding="utf-8")
    with pytest.raises(ModelError, match=r"its config.yaml describes a model .*, not a pipeline") as info:
        PyannoteModels(str(model))
    assert "plda" not in str(info.value)
    hub = tmp_path / "speaker-diarization-3.1"
    shutil.copytree(pipeline_dir, hub)
    config = yaml.safe_load((hub / "config.yaml").read_text(encoding="utf-8"))
    config["pipeline"]["params"]["segmentation"] = "voicekit-test/segmentation-absent"
    (hub / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    with pytest.raises(ModelError) as info:
        PyannoteModels(str(hub))
    message = str(info.value)
    assert "names models by their Hugging Face names, which are not in the local cache" in message, message
    assert "`hf download voicekit-test/segmentation-absent`" in message and "Internet connection" not in message


@pytest.fixture(scope="module")
def sample_audio():
    from voicekit.audio import load_audio

    return load_audio(SAMPLE)


# --- the word mapping ------------------------------------------------------------------------------
def _w(start, end, text="w"):
    return Word(start, end, text, 0.9)


def test_assign_speakers_overlap_gap_and_empty():
    segments = [SpeakerSegment(0.0, 2.0, "S1"), SpeakerSegment(1.5, 4.0, "S2"),
                SpeakerSegment(6.0, 7.0, "S1"), SpeakerSegment(6.5, 6.6, "S2")]
    words = [_w(0.2, 0.6),    # inside S1 only
             _w(1.6, 2.6),    # 0.4 s with S1, 1.0 s with S2 -> S2
             _w(4.2, 4.5),    # gap: S2 ends 0.2 s before, S1 starts 1.5 s after -> S2
             _w(5.6, 5.9),    # gap: 0.1 s before S1 -> S1
             _w(6.4, 6.8),    # S1 0.4 s, S2 0.1 s -> S1
             _w(9.0, 9.0)]    # zero length, after everything -> last turn to end (S1 at 7.0)
    assert assign_speakers(words, segments) == ["S1", "S2", "S2", "S1", "S1", "S1"]
    assert assign_speakers(words, []) == [None] * len(words)
    # two turns of one label add up against a longer single turn of another
    split = [SpeakerSegment(0.0, 0.3, "A"), SpeakerSegment(0.3, 0.4, "B"), SpeakerSegment(0.4, 0.7, "A")]
    assert assign_speakers([_w(0.0, 0.7)], split) == ["A"]


def test_offline_diarizer_labels_in_order_of_first_appearance_and_pieces():
    segments = [SpeakerSegment(0.0, 3.0, "SPEAKER_01"), SpeakerSegment(3.0, 6.0, "SPEAKER_00")]
    diarizer = PyannoteOfflineDiarizer(segments)
    utt = Utterance(0, 0.0, np.zeros(16000 * 6, np.float32))
    words, pieces = diarizer.process(utt, [_w(0.5, 1.0), _w(1.2, 2.8), _w(3.4, 4.0), _w(4.2, 5.0)])
    assert [w.speaker for w in words] == ["Speaker A", "Speaker A", "Speaker B", "Speaker B"]
    assert [(p.start, p.end, p.speaker) for p in pieces] == [(0.0, 3.1, "Speaker A"), (3.1, 6.0, "Speaker B")]
    assert diarizer.process(utt, []) == ([], [])
    # no speaker found at all: every word still gets one
    words, _ = PyannoteOfflineDiarizer([]).process(utt, [_w(0.5, 1.0)])
    assert words[0].speaker == "Speaker A"


def test_a_resumed_meeting_labels_pyannote_speakers_after_the_stored_ones():
    """Diarizer.resume (`mic --append --diarizer pyannote`): pyannote keeps no embeddings, so no
    stored voice is known again, but no stored label is given to a new speaker."""
    from voicekit.turns import SpeakerTurn

    stored = [SpeakerTurn("Speaker A", "hi", 0.0, 1.0), SpeakerTurn("Diane", "yes", 1.0, 2.0),
              SpeakerTurn("Speaker B", "ok", 2.0, 3.0)]
    diarizer = PyannoteOfflineDiarizer([SpeakerSegment(10.0, 12.0, "SPEAKER_00"),
                                        SpeakerSegment(12.0, 14.0, "SPEAKER_01")])
    diarizer.resume(stored)
    utt = Utterance(5, 10.0, np.zeros(16000 * 4, np.float32))
    words, _ = diarizer.process(utt, [_w(10.5, 11.0), _w(12.5, 13.0)])
    assert [w.speaker for w in words] == ["Speaker C", "Speaker D"]


def test_streaming_labels_never_exceed_the_speaker_count_where_no_speaker_is_active():
    """A diarization review: an utterance with words in which no local speaker was active took a
    placeholder speaker of its own: with --num-speakers 2, a third label. Such words now go to the
    speaker heard last, and what was heard before any was active shares the first one's label."""
    from voicekit.diarization.online import DiarizerOptions
    from voicekit.diarization.pyannote_backend import PyannoteStreamingDiarizer

    rng = np.random.default_rng(0)
    directions = [v / np.linalg.norm(v) for v in rng.standard_normal((2, 192))]

    class Scripted:   # stand-in models: one local speaker active (a direction) or none, per utterance
        def __init__(self, plan):
            self.plan = list(plan)

        def frame_times(self, n):
            return 0.017 * np.arange(n) + 0.0085

        def segment(self, chunks):
            self.who = self.plan[0]
            act = np.zeros((len(chunks), 293, 3), np.float32)
            if self.who is not None:
                act[:, :, 0] = 0.9
            return act

        def embed(self, chunks, weights):
            return np.stack([directions[self.who or 0]] * len(chunks)).astype(np.float32)

    plan = [None, 0, None, 1, None]
    models = Scripted(plan)
    diarizer = PyannoteStreamingDiarizer(models, speakers=DiarizerOptions(num_speakers=2))
    labels = []
    for i, who in enumerate(plan):
        models.plan = [who]
        t0 = 10.0 * i
        words, _ = diarizer.process(Utterance(i, t0, np.zeros(16000 * 3, np.float32)), [_w(t0 + 0.5, t0 + 1.0)])
        labels.append(words[0].speaker)
    assert labels == ["Speaker A", "Speaker A", "Speaker A", "Speaker B", "Speaker B"]


def test_pieces_from_words_cover_the_utterance():
    utt = Utterance(0, 10.0, np.zeros(16000 * 4, np.float32))
    words = [Word(10.2, 10.5, "a", 1, "Speaker A"), Word(10.9, 11.2, "b", 1, "Speaker B"),
             Word(11.3, 11.6, "c", 1, "Speaker B"), Word(12.0, 12.5, "d", 1, "Speaker A")]
    pieces = pieces_from_words(utt, words, {"Speaker B": 0.4})
    assert [(p.start, p.end, p.speaker, p.similarity) for p in pieces] == [
        (10.0, 10.7, "Speaker A", 1.0), (10.7, 11.8, "Speaker B", 0.4), (11.8, 14.0, "Speaker A", 1.0)]


# --- options and errors ---------------------------------------------------------------------------
def test_parse_diarizer():
    assert parse_diarizer("embedded") is None
    assert parse_diarizer("pyannote") == DEFAULT_PIPELINE
    assert parse_diarizer("pyannote:/models/community-1") == "/models/community-1"
    assert parse_diarizer("pyannote:pyannote/speaker-diarization-3.1") == "pyannote/speaker-diarization-3.1"
    for bad in ("pyannote:", "nemo", "Pyannote"):
        with pytest.raises(ValueError, match="embedded .*pyannote:PATH_OR_NAME"):
            parse_diarizer(bad)


def test_load_errors_name_the_fix(tmp_path, monkeypatch):
    from voicekit.diarization.pyannote_backend import PyannoteModels
    from voicekit.models import ModelError

    with pytest.raises(ModelError, match="no such file or directory"):
        PyannoteModels(str(tmp_path / "missing"))
    with pytest.raises(ModelError, match=r"not in the local Hugging Face cache.*hf download voicekit-test/absent") as info:
        PyannoteModels("voicekit-test/absent")
    assert "Internet connection" not in str(info.value)   # the hub's own advice does not apply: nothing is fetched
    try:   # (a machine that has 3.1 in its cache loads it: nothing to check there)
        PyannoteModels("pyannote/speaker-diarization-3.1")
    except ModelError as exc:
        assert ("hf download pyannote/speaker-diarization-3.1` and the models its config names (for 3.1: "
                "`hf download pyannote/segmentation-3.0`") in str(exc)
    # the known trap: a plda entry naming a folder that does not exist is taken for a hub id
    from pyannote.audio.models.embedding import XVectorSincNet

    import torch

    embedding = XVectorSincNet()
    state = torch.random.get_rng_state()
    write_random_pipeline(tmp_path / "noplda", embedding, plda=False)
    assert torch.equal(torch.random.get_rng_state(), state), "writing checkpoints reseeded the caller's torch generator"
    with pytest.raises(ModelError, match="`plda` must be an existing directory"):
        PyannoteModels(str(tmp_path / "noplda"))
    # a trial: an empty folder, and checkpoints that are random bytes, got the plda advice
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match=r"^pyannote pipeline '.*empty' holds no config.yaml: give the directory"):
        PyannoteModels(str(tmp_path / "empty"))
    write_random_pipeline(tmp_path / "bytes", embedding)
    for checkpoint in (tmp_path / "bytes").rglob("pytorch_model.bin"):
        checkpoint.write_bytes(b"m" + bytes(range(256)) * 8)
    with pytest.raises(ModelError) as info:
        PyannoteModels(str(tmp_path / "bytes"))
    assert "a checkpoint its config.yaml names is not a whole PyTorch checkpoint" in str(info.value), info.value
    assert "plda" not in str(info.value)
    # pyannote.audio missing
    monkeypatch.setitem(sys.modules, "pyannote.audio", None)
    with pytest.raises(ModelError, match="install_pyannote.sh"):
        PyannoteModels(str(tmp_path / "noplda"))


def test_cuda_requested_without_cuda_is_a_clear_error():
    import torch

    from voicekit.devices import DeviceError, require_torch_device
    from voicekit.diarization.pyannote_backend import PyannoteModels

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(DeviceError, match="compute device cuda: torch .* sees no CUDA device.*run on the CPU"):
        require_torch_device("cuda")
    with pytest.raises(DeviceError, match="no CUDA device"):
        PyannoteModels("/nonexistent", device="cuda")


@needs_eval
def test_cli_refuses_cuda_without_cuda_before_writing(tmp_path, capsys):
    import torch

    from voicekit.cli import main

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    out = tmp_path / "out"
    assert main(["replay", str(SAMPLE), "--out", str(out), "--device", "cuda", "--quiet"]) == 2
    assert "compute device cuda: CTranslate2" in capsys.readouterr().err and not (out / "meeting.sqlite").exists()
    assert main(["replay", str(SAMPLE), "--out", str(out), "--diarizer", "pyannote", "--refine"]) == 2
    assert "drop --refine" in capsys.readouterr().err


@needs_eval
@pytest.mark.parametrize("flags", [["--voices", "lib.sqlite"], ["--enrol-voices"], ["--keep-embeddings"]])
def test_cli_refuses_what_needs_the_embedded_encoder_with_pyannote_before_writing(tmp_path, capsys, flags):
    """A trial: with --diarizer pyannote, --voices was ignored without a word, --enrol-voices said
    "nothing enrolled" only after the whole meeting, and --keep-embeddings kept nothing (export
    --refine then advised --keep-embeddings)."""
    from voicekit.cli import main

    out = tmp_path / "out"
    assert main(["replay", str(SAMPLE), "--out", str(out), "--diarizer", "pyannote", *flags]) == 2
    err = capsys.readouterr().err
    assert f"{flags[0]} works with the embedded speaker encoder's embeddings, which --diarizer pyannote does not " \
           f"compute: drop {flags[0]} or --diarizer pyannote" in err, err
    assert not (out / "meeting.sqlite").exists()


# --- models ----------------------------------------------------------------------------------------
def test_wespeaker_resnet34_checkpoint_loads_and_embeds(tmp_path):
    """community-1's embedding architecture (WeSpeaker ResNet34, 256-d) through the same loader."""
    import torch
    from pyannote.audio.models.embedding import WeSpeakerResNet34

    from voicekit.diarization.pyannote_backend import PyannoteModels

    torch.manual_seed(2)
    write_random_pipeline(tmp_path, WeSpeakerResNet34())
    loaded = PyannoteModels(str(tmp_path))
    assert type(loaded.embedding.model_).__name__ == "WeSpeakerResNet34"
    rng = np.random.default_rng(0)
    chunk = (0.1 * rng.standard_normal((1, 16000 * 2))).astype(np.float32)
    act = loaded.segment(chunk)
    assert act.shape[0] == 1 and act.shape[2] == 3 and np.all((act >= 0) & (act <= 1))
    emb = loaded.embed(chunk, np.ones((1, act.shape[1]), np.float32))
    assert emb.shape == (1, 256) and np.isclose(np.linalg.norm(emb), 1.0, atol=1e-4)


@needs_eval
def test_segment_and_embed_shapes_on_a_real_recording(models, sample_audio):
    chunks = np.stack([sample_audio[i * 8000:i * 8000 + 80000] for i in range(3)])   # 5 s every 0.5 s
    act = models.segment(chunks)
    frames = models.frame_times(act.shape[1])
    assert act.shape[:1] == (3,) and act.shape[2] == 3 and act.dtype == np.float32
    assert 250 < act.shape[1] < 320                       # PyanNet: ~17 ms frames over 5 s
    assert 0 < frames[0] < 0.05 and 4.95 < frames[-1] < 5.0
    # soft powerset -> multi-label: at most two speakers at once, so the activations sum to <= 2
    assert np.all(act.sum(axis=2) <= 2.0 + 1e-4)
    emb = models.embed(chunks, act[:, :, 0])
    assert emb.shape == (3, 512) and np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-4)


@pytest.fixture(scope="module")
def offline_segments(models, sample_audio):
    return models.diarize(sample_audio)


@needs_eval
def test_offline_pipeline_on_a_real_recording(offline_segments, sample_audio):
    duration = len(sample_audio) / 16000
    assert offline_segments
    assert all(0.0 <= s.start < s.end <= duration + 0.05 for s in offline_segments)
    assert all(re.fullmatch(r"SPEAKER_\d\d", s.label) for s in offline_segments)
    assert [s.start for s in offline_segments] == sorted(s.start for s in offline_segments)


@needs_eval
def test_replay_cli_offline_maps_every_word(pipeline_dir, offline_segments, tmp_path, capsys):
    from voicekit.cli import main
    from voicekit.store import MeetingStore

    out = tmp_path / "out"
    code = main(["replay", str(SAMPLE), "--out", str(out), "--quiet", "--diarizer", f"pyannote:{pipeline_dir}"])
    assert code == 0
    err = capsys.readouterr().err
    assert "pyannote diarized the whole recording" in err
    from voicekit.outputs import FORMATS

    default_outputs = {f"sample.{ext}" for ext in FORMATS}
    assert default_outputs <= {p.name for p in out.iterdir()}
    store = MeetingStore(out / "meeting.sqlite")
    turns = store.turns()
    assert "pyannote:" in store.meta().get("diarizer", "")
    store.close()
    words = [w for t in turns for w in t.words]
    assert words and all(re.fullmatch(r"Speaker [A-Z]+", w.speaker or "") for w in words)
    # the labels are pyannote's, renamed in order of first appearance
    raw = assign_speakers(words, offline_segments)
    renamed = {r: f"Speaker {chr(65 + i)}" for i, r in enumerate(dict.fromkeys(raw))}
    assert [w.speaker for w in words] == [renamed[r] for r in raw]


@needs_eval
def test_offline_pyannote_replays_a_flac_that_breaks_off_as_far_as_it_goes(pipeline_dir, tmp_path, capsys):
    """A review: with --diarizer pyannote (offline) the whole recording was loaded at once, so a
    FLAC that breaks off raised the decoder's error (exit 2, no outputs) where the embedded
    diarizer transcribes it as far as it goes (exit 1). Then `export --refine` on that meeting
    advised flags that pyannote refuses."""
    import soundfile as sf

    from voicekit.cli import main

    flac = tmp_path / "sample.flac"
    sf.write(flac, sf.read(SAMPLE)[0], 16000)
    data = flac.read_bytes()
    cut = tmp_path / "cut.flac"
    cut.write_bytes(data[: len(data) * 2 // 3])
    out = tmp_path / "out"
    assert main(["replay", str(cut), "--out", str(out), "--quiet", "--diarizer", f"pyannote:{pipeline_dir}"]) == 1
    err = capsys.readouterr().err
    assert "is truncated (the decoder stopped: " in err and (out / "cut.json").exists(), err
    assert main(["export", str(out), "--refine"]) == 2
    err = capsys.readouterr().err
    assert "pyannote diarized it" in err and "--diarizer embedded --refine" in err and "--keep-embeddings" not in err


def test_eval_shows_no_refined_scores_where_no_refinement_ran():
    """A review: `voicekit eval --diarizer pyannote` printed refined cells, the live labels
    re-joined, as if a refinement had run."""
    from voicekit.evaluation import DerScore, EvalFile, FileResult, format_table

    score = {c: DerScore(c, 10.0, 0.0, 1.0, 1.0) for c in (0.0, 0.5)}
    file = EvalFile("m", SAMPLE, SAMPLE, None, None, 2, "test")
    table = format_table([FileResult(file, score, {}, 2, 0, None, 10.0, 1.0)])
    row, pooled = table.splitlines()[-2:]
    assert row.startswith("| m | test | 20.0 | 20.0 (0.0/10.0/10.0) | - | - | 2/-/2 |"), row
    assert "| - | - | live/refined exact 1/-, within ±1 1/-, of 1 |" in pooled, pooled


@needs_eval
def test_streaming_pipeline_windows_and_words(models):
    from voicekit.audio import iter_16k_blocks
    from voicekit.diarization.online import DiarizerOptions
    from voicekit.diarization.pyannote_backend import PyannoteOptions, PyannoteStreamingDiarizer
    from voicekit.pipeline import Components, Pipeline, PipelineOptions

    # random weights give diffuse activations (below diart's tau_active 0.6 and the 0.5 onset), so
    # low thresholds here make every stage run: embeddings, centroid matching, binarisation
    streaming = PyannoteOptions(source="fixture", mode="streaming", tau_active=0.1, rho_update=0.1, onset=0.2)
    options = PipelineOptions(pyannote=streaming, diarizer=DiarizerOptions(max_speakers=4))
    pipe = Pipeline(options, Components(components().transcriber, None, models))
    d = pipe.diarizer
    assert isinstance(d, PyannoteStreamingDiarizer)
    seen = []
    process = d.process
    d.process = lambda utt, words: (seen.append((utt, words)), process(utt, words))[1]
    result = pipe.run(iter_16k_blocks(SAMPLE))
    ends = np.array(d.window_ends)
    assert len(seen) >= 3 and len(ends) > 20 and np.all(np.diff(ends) > 0)
    # windows every 0.5 s on the stream grid, plus one at each utterance end
    utt_ends = {round(u.end, 6) for u, _ in seen}
    on_grid = np.isclose(ends / 0.5, np.round(ends / 0.5), atol=1e-6)
    assert all(g or round(float(t), 6) in utt_ends for t, g in zip(ends, on_grid))
    for utt, _ in seen:                         # each utterance is covered by its windows
        mine = ends[(ends > utt.start) & (ends <= utt.end + 1e-6)]
        assert len(mine) and np.isclose(mine[-1], utt.end)
        assert np.all(np.diff(np.concatenate([[utt.start], mine])) <= 0.5 + 1e-6)
    assert 1 <= len(d.centroids) <= 4            # capped by --max-speakers
    words = [w for t in result.turns for w in t.words]
    assert words and all(re.fullmatch(r"Speaker [A-D]", w.speaker or "") for w in words)
    first = list(dict.fromkeys(w.speaker for w in words))
    assert first == [f"Speaker {chr(65 + i)}" for i in range(len(first))]
    assert d.history == []
    # diart's thresholds on the same utterances: every word still gets a speaker
    plain = PyannoteStreamingDiarizer(models, PyannoteOptions(mode="streaming"))
    for utt, utt_words in seen:
        labelled, pieces = plain.process(utt, utt_words)
        assert len(labelled) == len(utt_words) and all(w.speaker for w in labelled)
        if utt_words:
            assert pieces[0].start == utt.start and pieces[-1].end == utt.end


@needs_eval
def test_streaming_diarizer_given_an_utterance_again_after_ctrl_c_labels_as_without(models, monkeypatch):
    """Ctrl-C inside the segmentation model, after the diarizer moved its audio buffer: it is left
    as it was, so the pipeline's retry of the utterance gives what an uninterrupted run gives."""
    from voicekit.audio import load_audio
    from voicekit.diarization.pyannote_backend import PyannoteOptions, PyannoteStreamingDiarizer
    from voicekit.vad import Endpointer, make_vad

    x = load_audio(EVAL / "pyaudioanalysis" / "diarizationExample.wav")[:17 * 16000]
    ep = Endpointer(make_vad("silero"))
    utts = list(ep.push(x)) + list(ep.flush())
    stt = components().transcriber
    given = [(u, stt.transcribe(u.samples, u.start)) for u in utts]
    assert len(given) >= 3 and all(w for _, w in given)
    options = PyannoteOptions(source="fixture", mode="streaming", tau_active=0.1, rho_update=0.1, onset=0.2)
    plain = PyannoteStreamingDiarizer(models, options)
    expected = [plain.process(u, w)[0] for u, w in given]
    d = PyannoteStreamingDiarizer(models, options)
    got = [d.process(*given[0])[0]]
    segment, calls = models.segment, []

    def ctrl_c_once(chunks):
        calls.append(len(chunks))
        if len(calls) == 1:
            raise KeyboardInterrupt
        return segment(chunks)

    monkeypatch.setattr(models, "segment", ctrl_c_once)
    with pytest.raises(KeyboardInterrupt):
        d.process(*given[1])
    monkeypatch.undo()
    got += [d.process(u, w)[0] for u, w in given[1:]]
    assert [[w.speaker for w in ws] for ws in got] == [[w.speaker for w in ws] for ws in expected]
    assert d.window_ends == plain.window_ends
    assert len(d.centroids) == len(plain.centroids)
    assert all(np.allclose(a, b) for a, b in zip(d.centroids, plain.centroids))


def test_full_size_random_pipeline_has_segmentation_3_0_architecture(tmp_path):
    """scripts/bench_gpu.py times this one: PyanNet as pyannote/segmentation-3.0 (1,473,265
    parameters, a 4-layer bidirectional LSTM of 128 units, 7 powerset classes)."""
    from pyannote.audio.models.embedding import XVectorSincNet

    from voicekit.diarization.pyannote_backend import PyannoteModels

    write_random_pipeline(tmp_path / "full", XVectorSincNet(), segmentation="full")
    seg = PyannoteModels(str(tmp_path / "full")).segmentation_model
    assert sum(p.numel() for p in seg.parameters()) == 1_473_265
    assert (seg.lstm.num_layers, seg.lstm.hidden_size, seg.lstm.bidirectional) == (4, 128, True)
    assert seg.classifier.out_features == 7
    with pytest.raises(ValueError, match="segmentation size 'huge': use one of small, full"):
        write_random_pipeline(tmp_path / "huge", XVectorSincNet(), segmentation="huge")

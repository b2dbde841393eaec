"""SRT and WebVTT cues: each speaker turn split by its word timestamps into cues of at most
2 lines of 42 characters and 7 s (voicekit.outputs.subtitle_cues), on real Whisper word times
(faster-whisper's jfk.flac) and on hand-built turns for the cases a recording does not show."""

import dataclasses
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _pipeline_support import EVAL, components, eval_file, needs_eval
from voicekit.audio import load_audio
from voicekit.outputs import (MAX_CUE_LINES, MAX_CUE_SECONDS, MAX_LINE_CHARS, MIN_CUE_SECONDS, format_line,
                              subtitle_cues, to_rttm, to_srt, to_vtt)
from voicekit.turns import SpeakerTurn, Word, words_to_turns


def check_cues(turn, cues, prefix=""):
    """The cue contract: limits, every word once in order, times inside the turn in order."""
    assert cues, turn
    shown = []
    for cue in cues:
        assert 1 <= len(cue.lines) <= MAX_CUE_LINES, cue
        # the name starts the first line, or is that line when the first word does not fit after it
        alone = prefix.strip() and cue.lines[0] == prefix.rstrip()
        assert cue.lines[0].startswith(prefix) or (
            alone and len(prefix) + len(cue.lines[1].split()[0]) > MAX_LINE_CHARS), cue
        for line in cue.lines:
            assert len(line) <= MAX_LINE_CHARS or len(line.removeprefix(prefix).split()) == 1, cue
        shown += " ".join(cue.lines).removeprefix(prefix.rstrip() if alone else prefix).split()
    assert shown == turn.text.split()
    assert cues[0].start == turn.start and cues[-1].end == turn.end
    for cue, after in zip(cues, cues[1:]):
        assert turn.start <= cue.start <= cue.end <= after.start <= turn.end, (cue, after)


def timed_turn(texts, times, speaker="Speaker A"):
    """A turn of words ``texts`` (each with its leading space) at ``times`` [(start, end)…]."""
    words = tuple(Word(s, e, t, 0.9, speaker) for t, (s, e) in zip(texts, times))
    return words_to_turns(list(words))[0]


def even_turn(text, start, seconds):
    """A turn whose words share ``seconds`` evenly (0.1 s pause after each)."""
    texts = [" " + w for w in text.split()]
    step = seconds / len(texts)
    return timed_turn(texts, [(start + i * step, start + (i + 1) * step - 0.1) for i in range(len(texts))])


@pytest.fixture(scope="module")
def jfk_words():
    """Whisper tiny.en's words of jfk.flac (11 s, one speaker), 3 s into a meeting."""
    x = load_audio(EVAL / "faster_whisper" / "jfk.flac")
    return [dataclasses.replace(w, speaker="Speaker A") for w in components().transcriber.transcribe(x, offset=3.0)]


@needs_eval
def test_a_real_11_second_turn_becomes_cues_of_at_most_7_seconds(jfk_words):
    (turn,) = words_to_turns(jfk_words)
    assert turn.end - turn.start > 10.0 and len(turn.words) >= 20
    for prefix in ("", "Speaker A: "):
        cues = subtitle_cues(turn, prefix=prefix)
        check_cues(turn, cues, prefix)
        assert len(cues) >= 2
        assert all(c.end - c.start <= MAX_CUE_SECONDS for c in cues)
        starts = {w.start for w in turn.words}  # a later cue starts where its first word starts
        assert all(c.start in starts for c in cues[1:])


@needs_eval
def test_srt_and_vtt_name_the_speaker_on_every_cue_of_real_turns(jfk_words):
    # the pipeline's speaker-change split: "ask what you can do for your country." to Speaker B
    second_ask = [i for i, w in enumerate(jfk_words) if w.text.strip().lower() == "ask"][1]
    words = [w if i < second_ask else dataclasses.replace(w, speaker="Speaker B") for i, w in enumerate(jfk_words)]
    turns = words_to_turns(words)
    turns[1] = turns[1].replace(metadata={"sender_name": "Ann & <Bob>"})
    assert [t.speaker for t in turns] == ["Speaker A", "Speaker B"]
    per_turn = [subtitle_cues(t, prefix=f"{t.sender_name}: ") for t in turns]
    assert len(per_turn[0]) >= 2  # 8 s of Speaker A: more than one cue

    blocks = to_srt(turns).rstrip("\n").split("\n\n")
    assert len(blocks) == sum(map(len, per_turn))
    names = [t.sender_name for t, cues in zip(turns, per_turn) for _ in cues]
    times = []
    for n, (block, name) in enumerate(zip(blocks, names), 1):
        index, timing, *lines = block.split("\n")
        assert index == str(n) and lines[0].startswith(f"{name}: ") and 1 <= len(lines) <= 2
        assert sum(line.count(": ") for line in lines) == 1  # one speaker a cue
        times += re.fullmatch(r"(\S+) --> (\S+)", timing).groups()
    assert times == sorted(times) and times[0] == "00:00:03,000"

    vtt = to_vtt(turns)
    cues = vtt.split("\n\n")[1:]
    assert vtt.startswith("WEBVTT\n\n") and len(cues) == len(blocks)
    assert [c.split("\n")[1].split(">")[0] for c in cues[:len(per_turn[0])]] == ["<v Speaker A"] * len(per_turn[0])
    assert all(c.split("\n")[1].startswith("<v Ann &amp; &lt;Bob&gt;>") for c in cues[len(per_turn[0]):])


def test_a_40_word_turn_over_12_seconds_gives_several_cues():
    text = ("So the plan for the next quarter is to finish the new onboarding flow first and then move "
            "the whole team onto the billing rewrite because the old system cannot handle annual plans "
            "or the new tax rules next year")
    turn = even_turn(text, start=60.0, seconds=12.0)
    assert len(turn.words) == 40
    cues = subtitle_cues(turn, prefix="Speaker A: ")
    check_cues(turn, cues, "Speaker A: ")
    chars = len("Speaker A: ") + len(text)
    assert len(cues) >= chars // (2 * MAX_LINE_CHARS + 1) + 1 >= 3
    assert all(c.end - c.start <= MAX_CUE_SECONDS for c in cues)


def test_a_cue_that_must_break_ends_after_a_clause():
    turn = even_turn("We looked at the budget for the next quarter, and then we talked about "
                     "hiring for the spring and the summer.", start=0.0, seconds=6.0)
    cues = subtitle_cues(turn, prefix="Speaker A: ")
    check_cues(turn, cues, "Speaker A: ")
    assert cues[0].lines[-1].endswith("quarter,")  # not "…we talked", where the 84 characters end
    # a comma in the first half of the cue is too early to break at: the cue is filled instead
    turn = even_turn("Yes, we looked at the budget for the next quarter and then we talked about "
                     "hiring for the spring.", start=0.0, seconds=6.0)
    cues = subtitle_cues(turn)
    check_cues(turn, cues)
    assert not cues[0].lines[-1].endswith("Yes,") and len(" ".join(cues[0].lines)) > 42


def test_the_two_lines_of_a_cue_are_balanced():
    turn = even_turn("We should ship the new version on Monday morning.", start=0.0, seconds=3.0)
    (cue,) = subtitle_cues(turn)
    assert cue.lines == ("We should ship the new", "version on Monday morning.")  # not 40 + 8 characters


def test_a_cue_never_starts_inside_a_word():
    # Whisper writes some word pieces without a leading space; the break must fall before " don"
    texts = [" I"] + [" really"] * 9 + [" don", "'t", " know", " what", " to", " say"]
    turn = timed_turn(texts, [(i * 0.4, i * 0.4 + 0.3) for i in range(len(texts))])
    for width in range(20, 42):
        cues = subtitle_cues(turn, max_line_chars=width, max_lines=1)
        check_cues(turn, cues)
        assert not any(c.lines[0].startswith("'t") for c in cues)
        assert any("don't" in c.lines[0] for c in cues)


def test_a_turn_does_not_end_on_a_short_tail_cue():
    """A new-user trial saw "Speaker B: in the world." on screen for 0.74 s after a full cue (the
    greedy fill stopped just past "now."): the last two cues are broken again at the clause end."""
    turn = even_turn("We'll make you sound freezing now. I'm thinking it's the coldest place in the world.",
                     start=15.98, seconds=3.1)
    cues = subtitle_cues(turn, prefix="Speaker B: ")
    check_cues(turn, cues, "Speaker B: ")
    assert [" ".join(c.lines) for c in cues] == ["Speaker B: We'll make you sound freezing now.",
                                                 "Speaker B: I'm thinking it's the coldest place in the world."]
    assert min(c.end - c.start for c in cues) >= MIN_CUE_SECONDS


def test_a_short_cue_is_held_into_the_pause_before_the_next():
    # a full line said in 0.25 s, 2 s of pause, then more: the first cue stays up 5/6 s
    texts = [" abcdefg"] * 5 + [" next", " words"]
    turn = timed_turn(texts, [(i * 0.05, i * 0.05 + 0.05) for i in range(5)] + [(2.6, 3.0), (3.0, 3.4)])
    cues = subtitle_cues(turn, max_lines=1)
    check_cues(turn, cues)
    assert [c.lines for c in cues] == [(" ".join(["abcdefg"] * 5),), ("next words",)]
    assert cues[0].end == pytest.approx(MIN_CUE_SECONDS) and cues[1].start == 2.6


def test_no_cue_has_zero_length():
    """A streaming review: a word Whisper timed at its utterance's end (start == end), beside another
    channel's turn starting at that instant, gave `00:00:12.480 --> 00:00:12.480` (WebVTT: a cue's
    end is after its start)."""
    a = SpeakerTurn("Speaker A", "Yes.", 12.48, 12.48, (Word(12.48, 12.48, " Yes.", 0.9, "Speaker A"),), "replay/0")
    b = SpeakerTurn("Speaker B", "Go on then.", 12.48, 13.5, (Word(12.48, 13.5, " Go on then.", 0.9, "Speaker B"),),
                    "replay/1")
    for text in (to_vtt([a, b]), to_srt([a, b])):
        times = re.findall(r"(\d\d:\d\d:\d\d[.,]\d{3}) --> (\d\d:\d\d:\d\d[.,]\d{3})", text)
        assert len(times) == 2 and all(start < end for start, end in times), text
    # held for reading (no later cue starts after it), as a short cue is
    assert "00:00:12.480 --> 00:00:13.313" in to_vtt([a, b])
    # with the next cue at the same start and the meeting over there, a millisecond
    assert "00:00:12.480 --> 00:00:12.481" in to_vtt([a], until=12.48)


def test_a_short_cue_overlapped_by_the_next_is_never_shortened():
    """A mutation audit: nothing failed when a short cue was cut at the next cue's start though
    that start lies inside it (two channels speaking at once): it is held, never shortened."""
    a = SpeakerTurn("Speaker A", "Yes.", 10.0, 10.5, (Word(10.0, 10.5, " Yes.", 0.9, "Speaker A"),), "replay/0")
    b = SpeakerTurn("Speaker B", "Go on then.", 10.2, 11.5, (Word(10.2, 11.5, " Go on then.", 0.9, "Speaker B"),),
                    "replay/1")
    assert "00:00:10.000 --> 00:00:10.500\n<v Speaker A>Yes." in to_vtt([a, b])


def test_turns_without_usable_words_spread_their_text_over_the_turn():
    text = "A store row with no word times but a long text that cannot fit in one cue of two lines at all."
    bare = SpeakerTurn(speaker="Speaker B", text=text, start=10.0, end=16.0)
    cues = subtitle_cues(bare, prefix="Speaker B: ")
    check_cues(bare, cues, "Speaker B: ")
    assert len(cues) == 2
    # a hook rewrote the text: the cues show the committed text, not the words Whisper heard
    heard = even_turn("I think it is fine to go ahead with the vendor that we met on Tuesday", 0.0, 4.0)
    edited = heard.replace(text="I think it is fine to go ahead with [vendor name] that we met on Tuesday")
    cues = subtitle_cues(edited)
    check_cues(edited, cues)
    assert "[vendor" in " ".join(line for c in cues for line in c.lines)
    assert subtitle_cues(SpeakerTurn(speaker="Speaker A", text="  ", start=0.0, end=1.0)) == []


def test_a_word_longer_than_a_line_stays_whole():
    long_word = " " + "x" * 60
    turn = timed_turn([" see", long_word, " here"], [(0.0, 0.3), (0.3, 1.5), (1.5, 1.8)])
    cues = subtitle_cues(turn, prefix="Speaker A: ")
    check_cues(turn, cues, "Speaker A: ")
    assert [line for c in cues for line in c.lines if len(line) > MAX_LINE_CHARS] == ["x" * 60]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=50),
                          st.sampled_from(["", ",", ".", "?", ";"]), st.booleans(),
                          st.floats(0.0, 2.0), st.floats(0.01, 3.0)), min_size=1, max_size=60),
       st.sampled_from(["", "Speaker A: ", "Dr. Aleksandra Wójcik-Brzęczyszczykiewicz: "]))
def test_any_turn_keeps_the_cue_contract(spec, prefix):
    texts, times, t = [], [], 5.0
    for word, tail, glued, pause, length in spec:  # glued: a word piece without its leading space
        texts.append(("" if glued else " ") + word + tail)
        times.append((t + pause, t + pause + length))
        t += pause + length
    turn = timed_turn(texts, times)
    cues = subtitle_cues(turn, prefix=prefix)
    check_cues(turn, cues, prefix)
    for c in cues:  # over 7 s only for a single word
        assert c.end - c.start <= MAX_CUE_SECONDS or len(" ".join(c.lines).removeprefix(prefix).split()) == 1


def test_the_live_line_shows_start_and_end_to_a_tenth_of_a_second():
    turn = timed_turn([" Hi,", " this", " is", " Diane."], [(3.12, 3.4), (3.5, 3.7), (3.7, 3.9), (4.0, 7.94)])
    assert format_line(turn) == "[00:00:03.1 → 00:00:07.9] Speaker A: Hi, this is Diane."
    late = dataclasses.replace(turn, start=3725.25, end=3729.96)
    assert format_line(late).startswith("[01:02:05.2 → 01:02:10.0] ")


def test_the_rttm_gives_onset_and_duration_and_reads_back_as_the_same_diarization(tmp_path):
    """Each RTTM line is ``SPEAKER file 1 onset duration <NA> <NA> name <NA> <NA>``; read back by
    the evaluation's reference loader it scores DER 0 against the turns that wrote it, and a
    duration written as the end time would not."""
    from pyannote.core import Segment, Timeline
    from pyannote.metrics.diarization import DiarizationErrorRate

    from voicekit.evaluation import EvalFile, load_reference, turns_to_annotation

    turns = [even_turn("good morning everyone", 1.5, 2.0),
             dataclasses.replace(even_turn("hi there", 4.25, 1.5), speaker="Speaker B",
                                 metadata={"sender_name": "Sheila Smith"}),
             even_turn("shall we start", 6.0, 2.5)]
    rttm = to_rttm(turns, "my meeting")
    assert rttm.splitlines() == [
        "SPEAKER my_meeting 1 1.500 1.900 <NA> <NA> Speaker_A <NA> <NA>",
        "SPEAKER my_meeting 1 4.250 1.400 <NA> <NA> Sheila_Smith <NA> <NA>",
        "SPEAKER my_meeting 1 6.000 2.400 <NA> <NA> Speaker_A <NA> <NA>"]
    path = tmp_path / "m.rttm"
    path.write_text(rttm, encoding="utf-8")
    ref, _ = load_reference(EvalFile("my_meeting", path, path, None, None, 2, "test"), 10.0)
    assert sorted(ref.labels()) == ["Sheila_Smith", "Speaker_A"]
    hyp = turns_to_annotation(turns, "my_meeting")
    assert DiarizationErrorRate(collar=0.0, skip_overlap=False)(ref, hyp, uem=Timeline([Segment(0, 10)])) == 0.0


def test_chinese_and_japanese_subtitles_keep_the_cue_limits():
    """A multilingual trial: Whisper's Chinese and Japanese words have no leading space, so a cue
    could only break where none is, and a 56-character Chinese turn was one cue of one line
    (108 columns, 13.75 s). Now lines break between wide characters, in columns (a wide
    character takes two), keeping the line-breaking rules (no line opens on '，' or '。')."""
    from voicekit.outputs import MAX_CUE_SECONDS, MAX_LINE_CHARS, _width

    text = ("我觉得我们应该先讨论一下预算的问题，然后再决定人员的安排，"
            "大家下周一之前把材料准备好，谢谢各位的配合。")
    words = tuple(Word(i * 0.25, (i + 1) * 0.25, ch, 0.9, "Speaker A") for i, ch in enumerate(text))
    for turn in (SpeakerTurn("Speaker A", text, 0.0, len(text) * 0.25, words=words),
                 SpeakerTurn("Speaker A", text, 0.0, 13.75)):          # a hook's text: no words
        cues = subtitle_cues(turn, prefix="Speaker A: ")
        assert "".join("".join(c.lines) for c in cues).replace("Speaker A: ", "") == text
        assert len(cues) >= 3 and all(len(c.lines) <= 2 for c in cues), cues
        assert all(_width(line) <= MAX_LINE_CHARS for c in cues for line in c.lines), cues
        assert all(c.end - c.start <= MAX_CUE_SECONDS for c in cues), cues
        assert not any(line.replace("Speaker A: ", "")[:1] in "，。" for c in cues for line in c.lines)
    jp = "「予算」と「人員」について、Elenaさんはどう思いますか？"
    lines = [line for c in subtitle_cues(SpeakerTurn("Speaker B", jp, 0.0, 6.0), prefix="Speaker B: ") for line in c.lines]
    assert all(not line.endswith("「") and line[:1] not in "」、？" for line in lines), lines
    assert "Elena" in "".join(lines)   # a Latin run inside Japanese stays whole


def test_a_very_long_name_is_cut_at_the_start_of_each_srt_cue():
    """A LiveKit trial: a 260-character display name turned a 2 s turn into 5 one-word cues with
    lines of 250 characters; the name is cut to 20 columns with '…' in the SRT (the JSON and the
    text keep it whole)."""
    from voicekit.outputs import MAX_LINE_CHARS, to_srt

    long_name = " ".join(["Bartholomew"] * 20)
    turn = dataclasses.replace(even_turn("and so my fellow americans ask not", 0.0, 2.0),
                               metadata={"sender_name": long_name})
    lines = [line for line in to_srt([turn]).splitlines() if line and "-->" not in line and not line.isdigit()]
    assert lines == ["Bartholomew Barthol…: and so", "my fellow americans ask not"], lines
    assert all(len(line) <= MAX_LINE_CHARS for line in lines)


def _srt_cues(text):
    """(start, end, lines) of each cue of an SRT text, times in seconds."""
    def seconds(stamp):
        h, m, rest = stamp.split(":")
        return int(h) * 3600 + int(m) * 60 + float(rest.replace(",", "."))

    out = []
    for block in text.strip().split("\n\n"):
        _, times, *lines = block.splitlines()
        start, end = times.split(" --> ")
        out.append((seconds(start), seconds(end), lines))
    return out


def test_two_long_names_alike_at_their_start_are_cut_apart_in_the_srt():
    """A captioner's trial: "Councilmember Maria García" and "Councilmember Maria Chen" were both
    "Councilmember Maria…" on every SRT cue: two people shown as one. A cut that makes two names
    alike goes on until they differ; other long names keep the 20-column cut."""
    from voicekit.outputs import cue_names

    names = ["Councilmember Maria García", "Councilmember Maria Chen", "Dr. Oluwaseun Adebayo", "Speaker A"]
    assert cue_names(names + names) == {"Councilmember Maria García": "Councilmember Maria G…",
                                        "Councilmember Maria Chen": "Councilmember Maria C…",
                                        "Dr. Oluwaseun Adebayo": "Dr. Oluwaseun Adeba…", "Speaker A": "Speaker A"}
    turns = [dataclasses.replace(even_turn(text, start, 2.0), metadata={"sender_name": name})
             for text, start, name in (("the budget is approved", 0.0, names[0]), ("I object", 3.0, names[1]))]
    names_shown = [lines[0].split(": ")[0] for _, _, lines in _srt_cues(to_srt(turns))]
    assert names_shown == ["Councilmember Maria G…", "Councilmember Maria C…"], names_shown


def test_long_names_alike_but_at_their_end_keep_the_end_that_tells_them_apart():
    """A review: names that differ only at column 47 were widened to 48 columns, over the 42 of
    a line, on every cue. Past 30 columns the cut keeps the start and the distinguishing end."""
    from voicekit.outputs import MAX_LINE_CHARS, _width, cue_names

    names = ["Councilmember Maria Gonzalez-Rodriguez, District 3", "Councilmember Maria Gonzalez-Rodriguez, District 4"]
    shown = cue_names(names)
    assert shown == {names[0]: "Councilmember Mari…3", names[1]: "Councilmember Mari…4"}
    assert all(_width(s) == 20 for s in shown.values())
    turns = [dataclasses.replace(even_turn("we will now hear the report of the finance committee on the budget", start, 6.0),
                                 metadata={"sender_name": name}) for start, name in ((0.0, names[0]), (7.0, names[1]))]
    lines = [line for _, _, cue in _srt_cues(to_srt(turns)) for line in cue]
    assert lines[0].startswith("Councilmember Mari…3: ") and max(map(_width, lines)) <= MAX_LINE_CHARS


def test_no_run_of_dashes_becomes_an_srt_arrow():
    """A review: one pass of "-->" -> "->" turned "--->" into "-->", and a hook's text could forge
    a cue timing line on a cue's second line."""
    text = "xxxxxxx 00:00:30,000 ---> 00:00:40,000 and ----> and -- > and -->"
    srt = to_srt([dataclasses.replace(even_turn(text, 1.0, 2.0), metadata={"sender_name": "Ops ---> Finance"})])
    text_lines = [line for line in srt.splitlines() if not re.fullmatch(r"[\d:,]+ --> [\d:,]+|\d+|", line)]
    assert text_lines and not any("-->" in line for line in text_lines), srt
    assert "Ops -> Finance" in srt


@pytest.mark.parametrize("emoji", ["👍🏽", "👨\u200d👩\u200d👧", "👩\u200d💻", "🇫🇷", "❤️"])
def test_a_line_never_breaks_inside_an_emoji(emoji):
    """A review: wide characters were units of their own, so a line broke between 👍 and its
    skin tone, and around each joiner of 👨‍👩‍👧."""
    from voicekit.outputs import _units

    units = [u for u, _ in _units(emoji * 3)]
    assert "".join(units) == emoji * 3 and all(u and not u.replace(emoji, "") for u in units), units
    cues = subtitle_cues(even_turn(" ".join([emoji * 12] * 4), 0.0, 8.0), prefix="Speaker A: ")
    for cue in cues:
        for line in cue.lines:
            assert not line.startswith(("\u200d", "\U0001f3fd", "\ufe0f")), line


def test_a_short_cue_stays_up_into_the_pause_after_it_long_enough_to_be_read():
    """A captioner's trial: a one-word turn ("Yes.", 0.32 s) followed by 2 s of silence was a
    0.32 s cue, and 49 characters in 2.12 s read at 23 a second. A cue stays up into the pause
    after it for 5/6 s at least and 1/20 s a character (Netflix), never past the next cue's start
    nor 7 s; the turns, the JSON and the RTTM keep the speech's times."""
    from voicekit.outputs import MAX_READING_CPS

    yes = timed_turn([" Yes."], [(24.544, 24.864)])
    fast = dataclasses.replace(even_turn("It's like meditating in the water, and it's like,", 27.0, 2.12),
                               speaker="Speaker B", metadata={"sender_name": "Speaker B"})
    soon = dataclasses.replace(timed_turn([" Right."], [(30.2, 30.6)]), speaker="Speaker C",
                               metadata={"sender_name": "Speaker C"})
    for render in (to_srt, to_vtt):
        text = render([yes, fast, soon])
        if render is to_vtt:   # the same cue times, in WebVTT's notation
            text = "\n\n".join(f"0\n{b.replace('.', ',', 2)}" for b in text.split("\n\n")[1:])
        cues = _srt_cues(text)
        assert [(round(a, 3), round(b, 3)) for a, b, _ in cues] == [
            (24.544, round(24.544 + MIN_CUE_SECONDS, 3)),                    # held 5/6 s (then silence)
            (27.0, round(27.0 + 49 / MAX_READING_CPS, 3)),                   # 49 characters at 20 a second
            (30.2, round(30.2 + MIN_CUE_SECONDS, 3))], cues
    # a next cue that starts sooner cuts the hold there
    close = timed_turn([" No."], [(25.0, 25.3)], speaker="Speaker B")
    assert [(round(a, 3), round(b, 3)) for a, b, _ in _srt_cues(to_srt([yes, close]))][0] == (24.544, 25.0)
    # and the end of the meeting cuts the last one (a trial: a cue held 0.9 s past the recording)
    assert [(round(a, 3), round(b, 3)) for a, b, _ in _srt_cues(to_srt([yes], until=25.0))] == [(24.544, 25.0)]
    # two cues at one start (two channels) are both held to the next later start, not to each other
    also = timed_turn([" Yep."], [(24.544, 24.864)], speaker="Speaker C")
    assert [(round(a, 3), round(b, 3)) for a, b, _ in _srt_cues(to_srt([yes, also, close]))] == [
        (24.544, 25.0), (24.544, 25.0), (25.0, round(25.0 + MIN_CUE_SECONDS, 3))]


def test_a_word_too_long_to_follow_the_name_starts_the_next_line_of_the_srt_cue():
    """A captioner's trial: "Speaker C: Donaudampfschifffahrts…gesellschaft" made a 91-column SRT
    line (the docs promise that a word longer than a line stays whole on a line of its own)."""
    word = "Donaudampfschifffahrtselektrizitätenhauptbetriebswerkbauunterbeamtengesellschaft"
    turn = dataclasses.replace(timed_turn([" " + word, " is", " long."], [(0.0, 2.0), (2.0, 2.3), (2.3, 2.8)]),
                               metadata={"sender_name": "Speaker C"})
    lines = [line for _, _, ls in _srt_cues(to_srt([turn])) for line in ls]
    assert lines == ["Speaker C:", word, "Speaker C: is long."], lines


def test_two_names_that_only_spaces_tell_apart_stay_two_speakers_in_the_rttm():
    """A researcher's trial: "Ana María" and "Ana_María" were both written Ana_María, one speaker
    to a DER scorer."""
    turns = [dataclasses.replace(even_turn("hola", 0.0, 1.0), metadata={"sender_name": "Ana María"}),
             dataclasses.replace(even_turn("buenas", 1.0, 1.0), speaker="Speaker B",
                                 metadata={"sender_name": "Ana_María"}),
             dataclasses.replace(even_turn("sí", 2.0, 1.0), metadata={"sender_name": "Ana María"})]
    assert [line.split()[7] for line in to_rttm(turns, "m").splitlines()] == ["Ana_María", "Ana_María_2", "Ana_María"]


def test_the_evaluation_scores_every_stretch_of_a_uem_and_reads_a_plain_text_transcript(tmp_path):
    """A researcher's trial: a UEM of two stretches was scored on its last one only (no warning),
    and a plain-text transcript, which `voicekit eval --help` asked for, ended the run with
    "could not convert string to float" (an STM was expected)."""
    from voicekit.evaluation import EvalFile, load_reference, reference_text

    rttm = tmp_path / "m.rttm"
    rttm.write_text("SPEAKER m 1 0.0 30.0 <NA> <NA> ana <NA> <NA>\n", encoding="utf-8")
    uem = tmp_path / "m.uem"
    uem.write_text("m 1 5.0 12.0\nother 1 0 1\nm 1 20.0 30.0\n", encoding="utf-8")
    _, timeline = load_reference(EvalFile("m", rttm, rttm, uem, None, 1, "test"), 40.0)
    assert [(s.start, s.end) for s in timeline] == [(5.0, 12.0), (20.0, 30.0)]
    _, whole = load_reference(EvalFile("m", rttm, rttm, None, None, 1, "test"), 40.0)
    assert [(s.start, s.end) for s in whole] == [(0.0, 40.0)]

    plain = tmp_path / "m.txt"
    plain.write_text("And so it begins.\nThis is what a crocodile\n  sounds like.\n", encoding="utf-8")
    stm = tmp_path / "m.stm"
    stm.write_text(";; a comment\nm 1 bob 6.1 11.3 This is what a crocodile sounds like.\n"
                   "m 1 ana 1.6 3.8 And so it begins.\nm 1 ana 12.0 12.5\n", encoding="utf-8")
    read = [reference_text(EvalFile("m", rttm, rttm, None, t, 1, "test")) for t in (plain, stm)]
    assert read == ["And so it begins. This is what a crocodile sounds like."] * 2


@needs_eval
def test_cpwer_scores_words_and_speakers_on_the_samples_reference():
    """An evaluator's trial: no speaker-attributed WER was measured, though the sample's STM
    names its speakers. cpWER (meeteval's) of the reference itself under other labels is 0; with
    every word under one label, Sheila's words are inserted into the stream matched to Diane and
    deleted from her unmatched one: 2 x Sheila's words / all words."""
    from voicekit.evaluation import cpwer, normalize_text, reference_segments
    from voicekit.turns import SpeakerTurn

    rows = reference_segments(eval_file("sample"))
    assert {r[0] for r in rows} == {"Diane", "Sheila"} and rows == sorted(rows, key=lambda r: r[1])
    relabelled = [SpeakerTurn({"Diane": "Speaker B", "Sheila": "Speaker A"}[s], text, start, end)
                  for s, start, end, text in rows]
    assert cpwer(rows, relabelled) == 0.0
    words = {name: sum(len(normalize_text(t).split()) for s, _, _, t in rows if s == name) for name in ("Diane", "Sheila")}
    merged = [t.replace(speaker="Speaker A") for t in relabelled]
    assert cpwer(rows, merged) == pytest.approx(2 * words["Sheila"] / (words["Diane"] + words["Sheila"]))
    assert reference_segments(eval_file("test")) is None   # no transcript


def test_wer_reads_typographic_apostrophes_as_apostrophes():
    """A review: Whisper's normaliser expands "don't" but split "don’t" in two, so a hand-typed
    reference with ’ scored 43 % WER against Whisper's identical words."""
    from voicekit.evaluation import cer, wer

    assert wer("I don\u2019t think it\u2019s ready", "I don't think it's ready") == 0.0
    assert cer("Rock \u2018n\u2019 roll, y\u02bcall", "Rock 'n' roll, y'all") == 0.0
    assert wer("I don't think", "I do think") > 0


def test_der_with_no_reference_speech_is_what_pyannote_gives():
    """A review: a UEM stretch with no reference speech and 3 s of false alarm scored DER 0 %,
    and the table printed the seconds as a percentage (300.0)."""
    from pyannote.core import Annotation, Segment, Timeline
    from pyannote.metrics.diarization import DiarizationErrorRate

    from voicekit.evaluation import DerScore, score_der

    ref, hyp = Annotation(uri="q"), Annotation(uri="q")
    hyp[Segment(1.0, 4.0)] = "Speaker A"
    uem = Timeline([Segment(0.0, 5.0)], uri="q")
    score = score_der(ref, hyp, uem, 0.0)
    assert score.der == DiarizationErrorRate(collar=0.0, skip_overlap=False)(ref, hyp, uem=uem) == 1.0
    assert DerScore(0.0, 0.0, 0.0, 0.0, 0.0).der == 0.0


def test_the_transcript_json_is_strict_json():
    """A hook's emitted_at of inf wrote "emitted_at": Infinity, which no JSON parser but Python's
    reads. The hooks refuse it now; the JSON writer refuses any NaN or infinity that would reach
    it, so a regression fails here rather than in a reader."""
    import json

    from voicekit.outputs import json_text, to_json

    t = SpeakerTurn("Speaker A", "Hi.", 1.0, 2.0, (Word(1.0, 2.0, " Hi.", 0.9, "Speaker A"),), emitted_at=2.5)
    assert json.loads(json_text(to_json([t])))["turns"][0]["emitted_at"] == 2.5
    for bad in (t.replace(emitted_at=float("inf")), t.replace(words=(Word(1.0, 2.0, " Hi.", float("nan")),))):
        with pytest.raises(ValueError):
            json_text(to_json([bad]))
    with pytest.raises(ValueError):
        json_text(to_json([t], {"duration": float("nan")}))

"""The example files README's commands use (examples/rename.py, examples/members.yaml): the same
as the blocks docs/hooks.md and docs/turn-taking.md explain them with, and working as the README
says on the demo recording (a new-user trial found the commands but not the files)."""

import json
import re
from pathlib import Path

from _pipeline_support import SAMPLE, needs_eval
from voicekit.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _block(doc: str, pattern: str) -> str:
    return re.search(pattern, (ROOT / "docs" / doc).read_text(encoding="utf-8"), re.S).group(1)


def test_the_examples_are_the_blocks_the_docs_explain():
    assert (EXAMPLES / "rename.py").read_text(encoding="utf-8") == _block("hooks.md", r"```python\n(# rename\.py\n.*?)```")
    assert (EXAMPLES / "members.yaml").read_text(encoding="utf-8") == _block(
        "turn-taking.md", r"`members\.yaml` \(`examples/members\.yaml`\):\n\n```yaml\n(.*?)```")


def test_the_rename_example_takes_names_in_any_script():
    """A multilingual trial: ``[A-Z][a-z]+`` renamed "I'm Zoë" to "Zo" and "This is José" to
    "Jos", and missed Ángela and Łukasz."""
    import runpy

    from voicekit.turns import SpeakerTurn

    hook = runpy.run_path(str(EXAMPLES / "rename.py"))["on_transcription"]
    said = ["Hello, I'm Zoë.", "This is José María.", "I am Ángela", "this is Łukasz", "Hi, this is Diane here",
            "I'm in New Jersey", "I'm OK", "nothing"]
    names = [getattr(hook(SpeakerTurn("Speaker A", text, 0.0, 1.0)), "name", None) for text in said]
    assert names == ["Zoë", "José", "Ángela", "Łukasz", "Diane", None, None, None]


@needs_eval
def test_the_readme_commands_with_the_examples_rename_and_decide_on_the_demo_recording(tmp_path, capsys):
    """`voicekit replay … --hook examples/rename.py --members examples/members.yaml --explain`: the
    speaker who says "This is Diane" is named Diane (live, the demo's two voices are one label:
    every turn), and Iris answers each turn, Scribe waiting to be named and Elena being held to
    Alice (T15), whom the closing line says nobody was."""
    out = tmp_path / "out"
    assert main(["replay", str(SAMPLE), "--out", str(out), "--quiet", "--hook", str(EXAMPLES / "rename.py"),
                 "--members", str(EXAMPLES / "members.yaml"), "--explain"]) == 0
    turns = json.loads((out / "sample.json").read_text(encoding="utf-8"))["turns"]
    assert [(t["speaker"], t["name"]) for t in turns] == [("Speaker A", "Diane")] * 3, turns
    stdout = capsys.readouterr().out.splitlines()
    decisions = [line.strip() for line in stdout if line.startswith("    [")]
    assert decisions == ["[fallback] -> Iris"] * 3, decisions
    assert stdout[-2:] == [
        "3 turns decided: fallback=3; answered: Iris 3; excluded by speak policy: Elena 3; answer_only names nobody "
        "who spoke: Alice (Elena); the speakers: Diane",
        "(no model is called here: each `fallback` is the member that answered least recently; a live meeting with "
        "a director model (T4) may choose another)"], stdout


@needs_eval
def test_the_own_audio_stack_block_of_capture_md_runs_on_48_khz_stereo(tmp_path, capsys, monkeypatch):
    """docs/capture.md's Python block (resample and downmix your own blocks, then push): a Python
    trial pushed 48 kHz blocks as they were and got 0 turns with no warning; the documented way
    hears the three speakers of the Picovoice recording from a 48 kHz stereo copy of it."""
    import numpy as np
    import soundfile as sf

    from voicekit.audio import load_audio, resample

    mono = resample(load_audio(SAMPLE.parent.parent / "picovoice_falcon" / "test.wav"), 16000, 48000)
    sf.write(tmp_path / "meeting-48k-stereo.wav", np.stack([mono, 0.8 * mono], axis=1), 48000, subtype="FLOAT")
    block = _block("capture.md", r"## Your own audio stack \(Python\).*?```python\n(.*?)```")
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "capture.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" ", 2)[:2] for line in lines] == [["Speaker", "A"], ["Speaker", "B"], ["Speaker", "C"]], lines
    assert "crocodile" in lines[1] and "seat belts" in lines[2].replace("seatbelts", "seat belts"), lines


@needs_eval
def test_the_program_of_library_md_runs_and_prints_what_the_page_shows(tmp_path, capsys, monkeypatch):
    """docs/library.md's program (a library trial had to piece it together from four pages): the
    hook renames Speaker A and blocks the crocodile turn, the ladder decides each turn, Iris's
    turns ask the live session for a reply, and the five files are written."""
    from _pipeline_support import EVAL

    block = _block("library.md", r"```python\n(.*?)```").replace('"../shared/eval', f'"{EVAL}')
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "library.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "[   1.6–   3.8 s] Diane: And so it begins.  → Iris (fallback)", lines
    assert lines[1].startswith("[  12.6–  18.2 s] Speaker C: Ladies and gentlemen") and lines[1].endswith(
        "→ Elena (fallback)"), lines
    assert lines[2] == "2 turns, 1 blocked; wrote meeting.json, meeting.rttm, meeting.srt, meeting.vtt, meeting.txt"
    events = [json.loads(line) for line in (tmp_path / "out" / "app" / "session.jsonl").read_text().splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds.count("conversation.item.create") == 2 and kinds.count("response.create") == 1, kinds
    assert kinds.index("response.create") == kinds.index("conversation.item.create") + 1   # after Diane's turn
    text = (tmp_path / "out" / "app" / "meeting.txt").read_text(encoding="utf-8")
    assert "Diane: And so it begins." in text and "crocodile" not in text

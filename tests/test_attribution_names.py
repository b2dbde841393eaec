"""A4, A5, A11: where a name comes from, and look-alike names told apart by rank."""

from __future__ import annotations

import sqlite3

import pytest

from voicekit.attribution import (
    AuthorRegister,
    Participant,
    meeting_lock,
    rank_labels,
    resolve_name,
)
from voicekit.attribution._unicode import name_keys, reads_alike, strip_ignorables
from voicekit.turns import SpeakerTurn


def turn(name: str | None, text: str = "hi", channel: str = "mic", **meta) -> SpeakerTurn:
    if name is not None:
        meta["sender_name"] = name
    return SpeakerTurn(speaker=meta.pop("speaker", f"Speaker {name}"), text=text, start=0.0,
                       end=1.0, channel=channel, metadata=meta)


def texts(turns, participants=()):
    return [lab.text if lab else None for lab in rank_labels(turns, participants)]


# --- A4 / A5 ----------------------------------------------------------------------------------

def test_a11_no_two_diarization_labels_read_alike():
    """A live trial: with labels shared by two room microphones, "Speaker L" was ranked as a
    look-alike of "Speaker I" (capital I and lowercase l share a skeleton) and read "Speaker L (2)"
    in the decisions and the store. The allocator gives no label with an L (nor RN, which reads
    as M); no two of the first 3000 labels it gives read alike."""
    from voicekit.turns import SpeakerLabels, speaker_label

    assert reads_alike("Speaker I", "Speaker L") and reads_alike("Speaker M", "Speaker RN")
    labels = SpeakerLabels()
    given = [labels.take() for _ in range(3000)]
    assert given[:12] == [speaker_label(i) for i in range(11)] + ["Speaker M"]
    keys = [name_keys(g) for g in given]
    assert len({k[0] for k in keys}) == len({k[1] for k in keys}) == len(given) == len(set(given))


def test_a11_refined_and_per_channel_labels_skip_look_alikes():
    """The refinement named a cluster that matched no live speaker with the first free label, and
    a per-channel recording its twelfth channel with ``speaker_label(11)``: both could be
    "Speaker L", which reads as "Speaker I". Both now skip the look-alikes too."""
    from voicekit.turns import free_labels, speaker_index, speaker_label

    live = [speaker_label(i) for i in range(11)]            # Speaker A … Speaker K
    free = free_labels(live)
    assert [next(free) for _ in range(2)] == ["Speaker M", "Speaker N"]
    free = free_labels(["Speaker B", "Speaker Q"])
    assert [next(free) for _ in range(3)] == ["Speaker A", "Speaker C", "Speaker D"]
    assert next(free_labels(speaker_label(i) for i in range(speaker_index("Speaker AL")))) == "Speaker AM"
    assert next(free_labels(speaker_label(i) for i in range(speaker_index("Speaker RN")))) == "Speaker RO"


def test_a4_sender_name_first_stripped_then_participant_record():
    alice = Participant("u-alice", "Alice", channels=("chat",))
    assert resolve_name(turn("  Ally  ", participant_id="u-alice", channel="chat"), [alice]) == "Ally"
    assert resolve_name(turn("   ", participant_id="u-alice", channel="chat"), [alice]) == "Alice"
    assert resolve_name(turn(None, participant_id="u-alice", channel="chat"), [alice]) == "Alice"
    assert resolve_name(turn(None, participant_id="u-bob", channel="chat"), [alice]) is None
    assert resolve_name(turn(None), [alice]) is None


def test_a4_participant_matched_by_its_resolved_identity_id():
    carol = Participant("u-carol", "Carol", identity_id="voice:carol")
    assert resolve_name(turn(None, participant_id="voice:carol", channel="mic"), [carol]) == "Carol"


def test_a5_participant_id_names_only_on_its_channels_identity_on_any():
    alice = Participant("u-alice", "Alice", identity_id="id-alice", channels=("room1/2",))
    assert resolve_name(turn(None, participant_id="u-alice", channel="room1/2"), [alice]) == "Alice"
    # the same id string on another channel is someone else
    assert resolve_name(turn(None, participant_id="u-alice", channel="sms"), [alice]) is None
    assert resolve_name(turn(None, identity_id="id-alice", channel="sms"), [alice]) == "Alice"
    assert resolve_name(turn(None, identity_id="u-alice", channel="mic"), [alice]) == "Alice"


def test_a6_unresolved_source_reads_as_channel_never_its_id():
    labels = texts([turn(None, participant_id="+15551234", channel="sms1"),
                    turn("Marie", channel="chat")])
    assert labels == ["@sms1", "Marie"]


# --- A11: reading alike ----------------------------------------------------------------------

ALICE_FAMILY = ["Alice", "ALICE", "\u0410lice", "\uff41\uff4c\uff49\uff43\uff45", "Al\u200bice"]


def test_a11_keys_use_skeleton_casefold_ignorables_nfkc():
    base = name_keys("Alice")
    for name in ALICE_FAMILY[1:]:
        k = name_keys(name)
        assert k[0] == base[0] or k[1] == base[1], name
    assert strip_ignorables("A\u200bl\u200di\u2060c\ufeffe\u00ad") == "Alice"
    assert not reads_alike("Alice", "Alicia")


def test_a11_alice_family_ranks_in_order_heard():
    assert texts([turn(n, speaker=f"S{i}") for i, n in enumerate(ALICE_FAMILY)]) == [
        "Alice", "ALICE (2)", "\u0410lice (3)", "\uff41\uff4c\uff49\uff43\uff45 (4)", "Alice (5)"]


def test_a11_latin_small_capitals_read_as_their_letters():
    """A red-team trial: UTS #39's skeleton keeps Latin small capitals, so ``Dianᴇ`` and ``Diaɴe``
    took the bare name beside Diane; they read alike as they do for role words (A7)."""
    assert texts([turn("Diane", speaker="1"), turn("Dian\u1d07", speaker="2"), turn("Dia\u0274e", speaker="3"),
                  turn("Dean", speaker="4")]) == ["Diane", "Dian\u1d07 (2)", "Dia\u0274e (3)", "Dean"]


def test_a11_lan_ian_ian_chain_through_case_and_look():
    assert texts([turn("Lan", speaker="1"), turn("Ian", speaker="2"), turn("ian", speaker="3")]) == [
        "Lan", "Ian (2)", "ian (3)"]


def test_a11_greek_and_cyrillic_lookalikes():
    # Greek capital Nu and omicron; Cyrillic es and o
    assert texts([turn("Nikos", speaker="1"), turn("\u039dik\u03bfs", speaker="2"),
                  turn("Olga", speaker="3"), turn("\u041ElgA", speaker="4")]) == [
        "Nikos", "\u039dik\u03bfs (2)", "Olga", "\u041ElgA (2)"]


def test_a11_combining_marks_compose_but_other_accents_differ():
    # precomposed e-acute and e + combining acute are one name; Zoe and Zoë are two (UTS #39)
    assert texts([turn("Ren\u00e9", speaker="1"), turn("Rene\u0301", speaker="2"),
                  turn("Zoe", speaker="3"), turn("Zo\u00eb", speaker="4")]) == [
        "Ren\u00e9", "Ren\u00e9 (2)", "Zoe", "Zo\u00eb"]


def test_a11_same_source_keeps_its_rank_and_same_name_two_sources_differ():
    labels = texts([turn("Alice", speaker="A"), turn("Alice", speaker="B"), turn("ALICE", speaker="A"),
                    turn("Alice", speaker="B")])
    assert labels == ["Alice", "Alice (2)", "ALICE", "Alice (2)"]


def test_a11_registered_participant_keeps_bare_name_when_registered_first():
    alice = Participant("u-alice", "Alice", channels=("room1/1",))
    labels = texts([turn("ALICE", speaker="X"), turn(None, participant_id="u-alice", channel="room1/1")],
                   [alice])
    assert labels == ["ALICE (2)", "Alice"]


def test_a11_registered_late_takes_lowest_rank_free():
    conn = sqlite3.connect(":memory:")
    AuthorRegister.ensure_schema(conn)
    reg = AuthorRegister("m")
    with meeting_lock(conn):
        assert reg.record_turn(conn, 1, turn("ALICE", speaker="X")).text == "ALICE"
        assert reg.record_turn(conn, 2, turn("alice", speaker="Y")).text == "alice (2)"
    alice = Participant("u-alice", "Alice", channels=("room1/1",))
    with meeting_lock(conn):
        assert reg.register_participant(conn, alice) == 3
        lab = reg.record_turn(conn, 3, turn(None, participant_id="u-alice", channel="room1/1"), [alice])
    assert lab.text == "Alice (3)"
    with meeting_lock(conn):  # committed ranks never change
        assert [x.text for x in reg.labels_for(conn, [turn("ALICE", speaker="X").replace(turn_id=1)])] == ["ALICE"]


def test_a11_unregistered_participant_does_not_reserve_the_name():
    guest = Participant("u-g", "Alice", channels=("room1/1",), registered=False)
    labels = texts([turn("ALICE", speaker="X"), turn(None, participant_id="u-g", channel="room1/1")], [guest])
    assert labels == ["ALICE", "Alice (2)"]


def test_a11_bridging_name_renumbers_neither_group():
    # "Lan" (keys lan/lan) and "ian" (ian/ian) are two groups; "Ian" (ian/lan) reads like both.
    labels = texts([turn("Lan", speaker="1"), turn("ian", speaker="2"), turn("Lan", speaker="3"),
                    turn("Ian", speaker="4"), turn("LAN", speaker="5"), turn("ian", speaker="2")])
    assert labels == ["Lan", "ian", "Lan (2)", "Ian (3)", "LAN (4)", "ian"]
    # after the bridge the two groups are one: a new source named like either takes the next rank
    # of the whole group (a mutation audit: without the merge it took "ian (2)" beside "Ian (2)")
    assert texts([turn("Lan", speaker="1"), turn("ian", speaker="2"), turn("Ian", speaker="3"),
                  turn("ian", speaker="4")]) == ["Lan", "ian", "Ian (2)", "ian (3)"]
    # a source that renames itself to a spelling of its group's name brings that spelling's keys:
    # a second person who gives it is ranked, never a bare name beside the first (mutation audit)
    assert texts([turn("Lan", speaker="1"), turn("Ian", speaker="1"), turn("ian", speaker="2")]) == [
        "Lan", "Ian", "ian (2)"]


def test_a11_name_ending_in_a_rank_cannot_pass_for_one():
    assert texts([turn("Bob", speaker="1"), turn("Bob (2)", speaker="2"), turn("Bob", speaker="3")]) == [
        "Bob", "Bob [2]", "Bob (2)"]


@pytest.mark.parametrize("name", ["Alice (\U0001d7d0)", "Alice \u2475", "Alice \ufe592\ufe5a",
                                  "Alice \u208d\u2082\u208e", "Alice\ufffb(2)"])
def test_a11_compatibility_forms_of_a_rank_cannot_pass_for_one(name):
    # mathematical bold digit, parenthesized digit, small and subscript parentheses, format char
    assert texts([turn("Alice", speaker="1"), turn(name, speaker="2"), turn("Alice", speaker="3")]) == [
        "Alice", "Alice [2]", "Alice (2)"]


def test_a11_role_like_names_rank_after_their_marker():
    assert texts([turn("User", speaker="1"), turn("user", speaker="2")]) == [
        "User (a participant)", "user (a participant) (2)"]


def test_a11_a_name_with_a_trailing_blank_symbol_is_ranked_after_its_bare_form():
    """"Alice" and "Alice" + U+2800 show the same; they were two bare labels."""
    assert texts([turn("Alice", speaker="1"), turn("Alice\u2800", speaker="2")]) == ["Alice", "Alice (2)"]


def test_a11_at_sign_names_group_with_their_bare_form():
    assert texts([turn("ai2", speaker="1"), turn("@ai2", speaker="2")]) == ["ai2", "ai2 (2)"]


@pytest.mark.parametrize("name", ["", "   ", "@", "\u200b"])
def test_a4_empty_names_are_absent(name):
    assert resolve_name(turn(name)) is None
    # absent, so the participant record names the source (it did not, for "@" and "\u200b")
    carol = Participant("u-carol", "Carol", channels=("room1/1",))
    assert resolve_name(turn(name, participant_id="u-carol", channel="room1/1"), [carol]) == "Carol"

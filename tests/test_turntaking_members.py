"""members.yaml loading (members with names and instructions, speak policies, floor)."""

from __future__ import annotations

import re

import pytest

from voicekit.attribution import SpeakerLabel
from voicekit.turntaking import Floor, MembersError, TurnSource, TurnTaker, load_members, parse_members

YAML = """\
floor: always
continuation:
  max_chars: 20
  max_words: 2
director:
  timeout_s: 2.5
members:
  - name: Zoë
    instructions: |
      You are Zoë, the note-taker.
      Keep it short.
  - name: Anaïs
    instructions: You are Anaïs, the domain expert.
    aliases: [Dr. Anaïs]
    answer_only: [Alice]
    answer_only_participants: [p-ceo]
"""


def test_t15_members_yaml_loads_policies(tmp_path):
    path = tmp_path / "members.yaml"
    path.write_text(YAML, encoding="utf-8")
    cfg = load_members(path)
    assert [m.name for m in cfg.members] == ["Zoë", "Anaïs"]
    assert cfg.members[0].instructions == "You are Zoë, the note-taker.\nKeep it short."
    assert cfg.members[1].aliases == ("Dr. Anaïs",)
    assert (cfg.floor, cfg.continuation_max_chars, cfg.continuation_max_words) == (Floor.ALWAYS, 20, 2)
    assert cfg.director_timeout_s == 2.5
    anais = cfg.members[1]
    assert anais.accepts(TurnSource(SpeakerLabel("Alice", 2, "mic"))) is True
    assert anais.accepts(TurnSource(SpeakerLabel("Bob", None, "mic"))) is False
    assert anais.accepts(TurnSource(SpeakerLabel("Bob", None, "mic"), participant_id="p-ceo")) is True
    t = TurnTaker(cfg)
    assert t.director_timeout_s == 2.5
    d = t.decide("Dr. Anaïs, is it safe?", SpeakerLabel("Alice", None, "mic"))
    assert (d.decided_by, d.responders) == ("mention", ("Anaïs",))


def test_t10_members_yaml_floor_when_addressed():
    cfg = parse_members({"floor": "when_addressed", "members": ["Iris", {"name": "Mei"}]})
    t = TurnTaker(cfg)
    d = t.decide("A remark that names nobody at all, for the minutes.", SpeakerLabel("Alice", None, "mic"))
    assert (d.decided_by, d.responders) == ("silence", ())


def test_members_yaml_floor_of_one_member():
    cfg = parse_members({"members": [{"name": "Scribe", "floor": "when_addressed"}, "Critic"]})
    assert [m.floor for m in cfg.members] == [Floor.WHEN_ADDRESSED, None]
    d = TurnTaker(cfg).decide("Any thoughts on the budget?", SpeakerLabel("Alice", None, "mic"))
    assert (d.decided_by, d.responders) == ("fallback", ("Critic",))
    with pytest.raises(MembersError, match=r"^member 'Scribe': unknown floor 'when addressed' "
                                           r"\(always \| when_addressed\)$"):
        parse_members({"members": [{"name": "Scribe", "floor": "when addressed"}]})
    with pytest.raises(MembersError, match=r"^members file: unknown floor 'never'"):
        parse_members({"floor": "never", "members": ["Iris"]})


def test_members_yaml_adds_room_phrases_in_other_languages():
    """A multilingual trial: the room address (T2) knew English only, and members.yaml could not
    add to it (`room_phrases` was an unknown key)."""
    cfg = parse_members({"floor": "when_addressed", "members": ["Iris", "Elena"],
                         "room": {"phrases": ["hallo zusammen", "à tous", "\u5927\u5bb6"], "exclusions": ["à tous les"]}})
    alice = SpeakerLabel("Alice", None, "mic")
    decided = [TurnTaker(cfg).decide(text, alice).decided_by for text in (
        "Hallo zusammen, was meint ihr?", "Bonjour à tous !", "\u5927\u5bb6\uff0c\u600e\u4e48\u770b\uff1f",
        "Everyone, thoughts?", "à tous les coups", "Wir arbeiten zusammen")]
    assert decided == ["group_address"] * 4 + ["silence"] * 2
    with pytest.raises(MembersError, match=r"room: unknown key 'phrase'"):
        parse_members({"members": ["Iris"], "room": {"phrase": ["x"]}})


@pytest.mark.parametrize(
    "data",
    [
        {"members": []},
        {"members": [{"instructions": "no name"}]},
        {"members": ["Iris", "iris"]},
        {"members": ["Iris"], "floor": "sometimes"},
        {"members": [{"name": "Iris", "instructions": 3}]},
        {"members": [{"name": "Iris", "answer_only": {"a": 1}}]},
        "just text",
    ],
)
def test_members_file_errors(data):
    with pytest.raises(MembersError):
        parse_members(data)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"members": [{"name": "Iris", "instruction": "x"}]},
         "member 'Iris': unknown key 'instruction' (did you mean 'instructions'?"),
        ({"member": ["Iris"]}, "members file: unknown key 'member' (did you mean 'members'?"),
        ({"members": ["Iris"], "continuation": {"max_char": 10}}, "continuation: unknown key 'max_char'"),
        ({"members": ["Iris"], "director": {"timeout": 2}}, "director: unknown key 'timeout'"),
    ],
)
def test_a_misspelled_key_is_an_error_naming_the_key_it_resembles(data, message):
    """A typo in members.yaml used to be ignored (the member silently had no instructions)."""
    with pytest.raises(MembersError) as info:
        parse_members(data)
    assert message in str(info.value)


@pytest.mark.parametrize("name", ["Speaker B", "speaker b", "SPEAKER  AB", "Sp\u0435aker B", "SPEAKER_01"])
def test_a_member_named_like_a_diarization_label_is_refused(name):
    """A member "Speaker B" beside a person diarized "Speaker B": --explain printed
    "Speaker B: …" for the human and "-> Speaker B" for the AI member."""
    with pytest.raises(MembersError, match="diarization label"):
        parse_members({"members": [name]})
    assert parse_members({"members": ["Speakerphone", "Speaker Bob"]}).members[1].name == "Speaker Bob"
    # a run of blanks is no role or label (it was refused as "reads like a role")
    assert parse_members({"members": ["Mei  Ling"]}).members[0].name == "Mei  Ling"


def test_yaml_booleans_are_refused_not_read_as_true_or_false(tmp_path):
    """`aliases: [Yes, On]` became the aliases "True", "True" and `name: No` read "'name' is
    required" (YAML 1.1 booleans; a user trial): both now say to quote the word."""
    path = tmp_path / "members.yaml"
    path.write_text("members:\n  - name: Iris\n  - name: Elena\n    aliases: [Yes, On]\n", encoding="utf-8")
    with pytest.raises(MembersError, match="aliases: YAML read a bare yes/no"):
        load_members(path)
    path.write_text("members:\n  - name: No\n", encoding="utf-8")
    with pytest.raises(MembersError, match=r'the boolean False \(an unquoted no/off/false, any case\): quote it, '
                                           r'e.g. name: "No"'):
        load_members(path)
    path.write_text("members:\n  - name: Yes\n", encoding="utf-8")   # the word quoted back is the user's kind
    with pytest.raises(MembersError, match=r'the boolean True \(an unquoted yes/on/true, any case\): quote it, '
                                           r'e.g. name: "Yes"'):
        load_members(path)
    path.write_text('members:\n  - name: "No"\n    aliases: ["Yes"]\n', encoding="utf-8")
    assert load_members(path).members[0].aliases == ("Yes",)


def test_a_member_key_without_its_colon_is_refused_not_made_a_member(tmp_path):
    """`  - name Elena` (colon missing) made an AI member named "name Elena": YAML reads the line
    as one string, and a bare string is the shorthand of a member's name. It is refused with
    the fix; the shorthand itself (`- Iris`) still names a member."""
    path = tmp_path / "members.yaml"
    path.write_text("members:\n  - name: Iris\n  - name Elena\n", encoding="utf-8")
    with pytest.raises(MembersError) as caught:
        load_members(path)
    assert str(caught.value) == (
        "member #2: 'name Elena' reads as the key 'name' without its colon: write `name: Elena` (a bare "
        "`- Elena` is short for `- name: Elena`; to name a member 'name Elena', write `- name: \"name Elena\"`)")
    for line, fix in (("name:Elena", "with no blank after its colon: write `name: Elena`"),
                      ("Name=Elena", "with '=' for its colon: write `name: Elena`"),
                      ("instructions Be brief.", "the key 'instructions' without its colon: write "
                                                 "`instructions: Be brief.`"),
                      ("answer_only_participants p-alice", "the key 'answer_only_participants' without its "
                                                           "colon: write `answer_only_participants: p-alice`")):
        path.write_text(f"members:\n  - name: Iris\n  - {line}\n", encoding="utf-8")
        with pytest.raises(MembersError, match=re.escape(fix)):
            load_members(path)
    # the shorthand, a quoted name that starts with the word, and names that only begin like a key
    path.write_text('members:\n  - Iris\n  - name: "name Elena"\n  - Nameless Nina\n  - Named\n  - Name Tag Bot\n',
                    encoding="utf-8")
    assert [m.name for m in load_members(path).members] == ["Iris", "name Elena", "Nameless Nina", "Named",
                                                            "Name Tag Bot"]


def test_a_key_without_its_colon_folded_into_the_value_above_is_refused(tmp_path):
    """Indented deeper than its member's keys, `aliases Addy` is not a YAML error: YAML folds it
    into the plain value above, and the member was named "Ada aliases Addy". It is refused with
    the line and the fix; instructions, prose wrapped over lines, may still hold such words."""
    path = tmp_path / "members.yaml"
    path.write_text("members:\n  - name: Ada\n      aliases Addy\n  - name: Bob\n", encoding="utf-8")
    with pytest.raises(MembersError) as caught:
        load_members(path)
    assert str(caught.value) == ("line 3: 'aliases Addy' was read as part of the value above it ('Ada' became "
                                 "'Ada aliases Addy'): a key needs its colon and a blank, `aliases: Addy`")
    path.write_text("- name: Ada\n  answer_only:\n    - Bob\n      name Carol\n", encoding="utf-8")
    with pytest.raises(MembersError, match=r"^line 4: 'name Carol' .* `name: Carol`$"):
        load_members(path)
    path.write_text('- name: Ada\n  instructions: Be brief,\n    name the speaker.\n  aliases: ["Ada\n    name B"]\n'
                    '- name: Ada\n    Lovelace\n', encoding="utf-8")
    ada, lovelace = load_members(path).members
    assert ada.instructions == "Be brief, name the speaker." and ada.aliases == ("Ada name B",)
    assert lovelace.name == "Ada Lovelace"


def test_a_list_item_indented_deeper_than_the_one_above_is_refused(tmp_path):
    """A user trial: `- Iris` over `  - Elena` (one blank more) loaded one member named "Iris -
    Elena" and the meeting ran with it. Instructions may still hold a bulleted list."""
    path = tmp_path / "members.yaml"
    path.write_text("members:\n - Iris\n  - Elena\n", encoding="utf-8")
    with pytest.raises(MembersError) as caught:
        load_members(path)
    assert str(caught.value) == ("line 3: '- Elena' was read as part of the value above it ('Iris' became "
                                 "'Iris - Elena'): give each '- ' item of a list the same indent")
    path.write_text("- name: Ada\n  aliases:\n    - Addy\n      - Lovelace\n", encoding="utf-8")
    with pytest.raises(MembersError, match=r"^line 4: '- Lovelace' .*\('Addy' became 'Addy - Lovelace'\)"):
        load_members(path)
    path.write_text("- name: Ada\n  instructions: Two rules.\n    - be brief\n    - name the speaker\n"
                    "- name: Mary-Jo - the host\n", encoding="utf-8")
    ada, host = load_members(path).members
    assert ada.instructions == "Two rules. - be brief - name the speaker" and host.name == "Mary-Jo - the host"


def test_members_file_bad_yaml(tmp_path):
    path = tmp_path / "members.yaml"
    path.write_text("members: [unclosed", encoding="utf-8")
    with pytest.raises(MembersError) as err:
        load_members(path)
    # one line with where the problem is (the CLI puts the path in front; it used to be there twice,
    # then PyYAML's multi-line context)
    message = str(err.value)
    assert message.startswith("not valid YAML at line 1, column ") and "\n" not in message, message
    assert str(path) not in message


def test_members_file_with_a_byte_order_mark_or_not_utf8(tmp_path):
    """A byte-order mark (Windows editors) is not part of the YAML; text in another encoding is
    one clear error, not a traceback."""
    path = tmp_path / "members.yaml"
    path.write_bytes("\ufeffmembers:\n  - name: Zoé\n".encode("utf-8"))
    assert [m.name for m in load_members(path).members] == ["Zoé"]
    path.write_bytes("members:\n  - name: Zoé\n".encode("latin-1"))
    with pytest.raises(MembersError, match=r"not UTF-8 text \(invalid continuation byte at byte 21\): save it as UTF-8"):
        load_members(path)


def test_members_file_thresholds_out_of_range_are_members_errors():
    """They reach the CLI as one `--members FILE: …` line (exit 2), not an internal error."""
    base = {"members": ["Iris"]}
    for extra, message in (({"continuation": {"max_chars": -3}}, "max_chars and max_words must be 0 or more"),
                           ({"continuation": {"max_words": -1}}, "got 25 and -1"),
                           ({"director": {"timeout_s": float("nan")}}, "timeout_s must be a number of seconds"),
                           ({"director": {"timeout_s": -2}}, "from 0 to 600, got -2.0")):
        with pytest.raises(MembersError, match=message):
            parse_members({**base, **extra})


def test_one_string_is_one_alias_or_participant_not_its_characters():
    """``aliases="Doc"`` and ``answer_only(participants="p-alice")`` were split into characters:
    "o, what now?" mentioned Iris, and participant "a" passed the policy while "p-alice" did not."""
    from voicekit.turntaking import Member, answer_only

    iris = Member("Iris", aliases="Doc")
    assert iris.call_names == ("Iris", "Doc")
    taker = TurnTaker([iris, Member("Elena")])
    ann = SpeakerLabel("Ann", None, "mic")
    assert taker.decide("Doc, what now?", ann).responders == ("Iris",)
    assert taker.decide("o, what now?", ann).decided_by != "mention"
    policy = answer_only(participants="p-alice")
    assert policy.participants == frozenset({"p-alice"})
    assert policy(TurnSource(ann, participant_id="p-alice")) and not policy(TurnSource(ann, participant_id="a"))


@pytest.mark.parametrize(("member", "problem"), [
    ({"name": "Scribe (AI)"}, "member 'Scribe (AI)': the name holds ( ), which speech-to-text does not write inside "
                              "a name, and a mention must say the whole name, so it would never be named: write "
                              "'Scribe AI' (say what the member is in its instructions)"),
    ("Scribe,", "member 'Scribe,': the name holds ,"),
    ("Scribe: AI", "member 'Scribe: AI': the name holds :, which"),   # not "reads like a role"
    ({"name": "Iris", "aliases": "Scribe, Keeper"}, "member 'Iris': aliases: 'Scribe, Keeper' is one string"),
    ({"name": "Elena", "aliases": ["Dr. Park!"]}, "member 'Elena': the alias 'Dr. Park!' holds !, which"),
])
def test_a_name_that_a_mention_could_never_say_is_refused(member, problem):
    """A panel trial: `- Scribe (AI)` and `name: Scribe,` loaded, and "Scribe, note it" then named
    nobody (a mention must say the whole name, and Whisper writes no brackets in one)."""
    with pytest.raises(MembersError, match="^" + re.escape(problem)):
        parse_members({"members": [member, "Iris"]})
    cfg = parse_members({"members": [{"name": "Dr. O'Neil-Park"}, "Jean-Luc"]})   # ., ' and - are said
    d = TurnTaker(cfg).decide("Dr O'Neil-Park, a word?", SpeakerLabel("Alice", None, "mic"))
    assert d.responders == ("Dr. O'Neil-Park",)


@pytest.mark.parametrize(("text", "name", "problem"), [
    ("members:\n  Scribe: {instructions: Keep the minutes.}\n  Critic: {}\n", "m.yaml",
     "members file: the members are a mapping of names (Scribe: …); write them as a list, one '- name: …' item "
     "each: members:, then '  - name: Scribe' and its keys under it"),
    ("Scribe:\n  instructions: Keep the minutes.\n", "m.yaml", "members file: the members are a mapping of names"),
    ('{"members": {"Iris": {}}}', "m.json", "members file: the members are a mapping of names (Iris: …); write them "
     "as a list, one '- name: …' item each: members:, then '  - name: Iris' and its keys under it (in JSON: "
     '"members": [{"name": "Iris", …}])'),
    ("floor: when_addressed\n", "m.yaml", "members file: no 'members' list; a members file is YAML (or JSON), e.g. "
     "'members: [{name: Iris}, {name: Scribe, floor: when_addressed}]' (docs/turn-taking.md shows one with each key)"),
    ("members: Iris\n", "m.yaml", "members file: 'members' must be a list, not str; a members file is YAML"),
    ('[[members]]\nname = "Scribe"\n', "m.toml", "m.toml is a TOML file; a members file is YAML (or JSON)"),
    ("MEMBERS = ['Scribe']\n", "m.py", "m.py is a Python file; a members file is YAML"),
])
def test_a_members_file_of_another_shape_or_format_is_refused_with_an_example(tmp_path, text, name, problem):
    """A panel trial: a mapping of members by name, and a file without `members:`, both gave
    "'members' must be a list", and a TOML or Python file a YAML parser's complaint."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(MembersError, match="^" + re.escape(problem)):
        load_members(path)


def test_names_written_as_one_string_with_commas_are_refused_with_the_list_to_write():
    """A panel trial: `answer_only: Diane, Sheila` loaded as the one name "Diane, Sheila", so the
    member answered nobody, without a word."""
    with pytest.raises(MembersError, match=r"^member 'Scribe': answer_only: 'Diane, Sheila' is one string, read as "
                                           r"one name: write a list, \[Diane, Sheila\] \(a name that holds a comma "
                                           r"goes in quotes in a list: \[\"Diane, Sheila\"\]\)$"):
        parse_members({"members": [{"name": "Scribe", "answer_only": "Diane, Sheila"}]})
    with pytest.raises(MembersError, match=r"aliases: 'Doc, Dr. Park' is one string"):
        parse_members({"members": [{"name": "Elena", "aliases": "Doc, Dr. Park"}]})
    cfg = parse_members({"members": [{"name": "Scribe", "answer_only": ["Smith, Jo", "Diane"]}]})
    assert cfg.members[0].speak_policy.names == {"Smith, Jo", "Diane"}


def test_an_empty_answer_only_list_is_refused_not_read_as_everyone():
    with pytest.raises(MembersError, match="answer_only lists nobody; list the names"):
        parse_members({"members": [{"name": "Iris", "answer_only": []}]})
    assert parse_members({"members": [{"name": "Iris"}]}).members[0].speak_policy is None


@pytest.mark.parametrize(("data", "message"), [
    # a misspelt 'name' said only "'name' is required", never naming the misspelt key
    ({"members": [{"nmae": "Iris"}]}, "member #1: unknown key 'nmae' (did you mean 'name'?"),
    ({"members": [{"name": 42}]}, "member #1: 'name' must be text, got 42: quote it, e.g. name: \"42\""),
    ({"members": [{"name": "  "}]}, "member #1: 'name' is empty: give the member a name"),
    # YAML's true was read as 1, 25.5 as 25 and "25" as 25, without a word
    ({"members": ["Iris"], "continuation": {"max_chars": True}},
     "continuation: max_chars must be a whole number of characters, 0 or more, got True (a YAML boolean)"),
    ({"members": ["Iris"], "continuation": {"max_chars": 25.5}},
     "continuation: max_chars must be a whole number of characters, 0 or more, got 25.5"),
    ({"members": ["Iris"], "continuation": {"max_words": "3"}},
     "continuation: max_words must be a whole number of words, 0 or more, got '3' (text: write the number"),
    # Python's "could not convert string to float: '5s'" named neither the key nor the fix
    ({"members": ["Iris"], "director": {"timeout_s": "5s"}},
     "director: timeout_s must be a number of seconds, 0 or more, got '5s' (text: write the number without "
     "quotes or a unit)"),
    # "two members have the same name" did not say which
    ({"members": ["Iris", "Elena", "Iris"]},
     "members #1 'Iris' and #3 'Iris' have the same name: give each member a name of its own"),
    # a Cyrillic І: the two members' views would show one label for both (A11's look-alike keys)
    ({"members": ["Iris", "\u0406ris"]},
     "members #1 'Iris' and #2 '\u0406ris' have names that read alike: give each member a name of its own"),
    ({"members": [{"name": "Iris", "aliases": ["Doc"]}, {"name": "Elena", "aliases": ["DOC"]}]},
     "name 'DOC' is used by both 'Iris' and 'Elena'"),
])
def test_a_wrong_name_or_number_is_refused_naming_the_key_and_the_fix(data, message):
    """A trial of members.yaml mistakes: each is one error that names the member or key and the fix."""
    with pytest.raises(MembersError) as info:
        parse_members(data)
    assert message in str(info.value)


def test_numbers_and_look_alike_free_names_still_load():
    room = parse_members({"members": ["Iris", {"name": "Elena", "aliases": ["Doc", "DOC"]}],
                          "continuation": {"max_chars": 40, "max_words": 0}, "director": {"timeout_s": 2}})
    assert (room.continuation_max_chars, room.continuation_max_words, room.director_timeout_s) == (40, 0, 2.0)
    assert room.members[1].aliases == ("Doc", "DOC")
    assert parse_members({"members": ["Iris"], "continuation": {"max_chars": 25.0}}).continuation_max_chars == 25
    # aliases are matched as mentions match them (NFC, case-folded): "AI" and "Al" are two mentions
    assert parse_members({"members": [{"name": "Iris", "aliases": ["AI"]}, "Al"]}).members[1].name == "Al"


def _load_text(tmp_path, text: str, name: str = "members.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return load_members(path)


@pytest.mark.parametrize("text, key", [
    ("members:\n  - Iris\n  - Scribe\nfloor: always\nmembers:\n  - Elena\n", "'members'"),
    ("members:\n  - name: Iris\n    instructions: You are Iris.\n    answer_only: [Alice]\n"
     "    instructions: Be brief.\n", "'instructions'"),
    ("members:\n  - name: Iris\n    name: Elena\n", "'name'"),
    ("members: [{name: Iris, name: Elena}]\n", "'name'"),
])
def test_a_key_given_twice_is_refused_not_the_first_value_dropped(tmp_path, text, key):
    """PyYAML keeps a repeated key's last value without a word: a second members list, or a
    second instructions, would replace the first."""
    with pytest.raises(MembersError, match=f"the key {key} is given again"):
        _load_text(tmp_path, text)
    with pytest.raises(MembersError, match="'members' is given twice"):
        _load_text(tmp_path, '{"members": ["Iris"], "members": ["Elena"]}', "members.json")


def test_a_json_members_file_is_read_as_json(tmp_path):
    """JSON indented with tabs (YAML refuses tabs), and json.dump's ASCII escapes of an emoji (a
    surrogate pair that YAML decodes as two unpaired halves, which no model call can encode)."""
    import json

    data = {"members": [{"name": "Iris", "instructions": "You are Iris 🌸, the designer."}, {"name": "Elena"}]}
    cfg = _load_text(tmp_path, json.dumps(data, indent="\t"), "members.json")
    assert cfg.members[0].instructions == "You are Iris 🌸, the designer."
    cfg.members[0].instructions.encode("utf-8")
    assert [m.name for m in _load_text(tmp_path, json.dumps(data, indent="\t")).members] == ["Iris", "Elena"]
    assert [m.name for m in _load_text(tmp_path, "[{name: Iris}, Elena]\n").members] == ["Iris", "Elena"]  # YAML flow
    with pytest.raises(MembersError, match=r"not valid JSON at line 1, column \d+"):
        _load_text(tmp_path, '{"members": ["Iris",]}', "members.json")


@pytest.mark.parametrize("items", ["[007, Alice]", "[12:30]", "[0042, 010]", "[1_000]"])
def test_a_number_in_a_name_list_is_refused_not_rewritten(items):
    """YAML reads 0042 as 34 (octal) and 12:30 as 750 (base 60): a turn from participant
    "0042" would then be refused."""
    for key in ("aliases", "answer_only", "answer_only_participants"):
        import yaml

        with pytest.raises(MembersError, match=r"as a number.*quote each name"):
            parse_members(yaml.safe_load(f"members:\n  - name: Iris\n    {key}: {items}\n"))


@pytest.mark.parametrize("name, held", [("Mei\u00a0Ling", "U+00A0 (no-break space)"),
                                        ("Iris\u00ad", "U+00AD (soft hyphen)"),
                                        ("Iris\u200b", "U+200B (zero width space)")])
def test_a_name_with_an_odd_space_or_invisible_character_says_so(name, held):
    with pytest.raises(MembersError, match=re.escape(f"the name holds {held}") + ".*retype the name"):
        parse_members({"members": [name]})


@pytest.mark.parametrize("section, value", [("continuation", "off"), ("continuation", "0"), ("continuation", "[]"),
                                            ("director", "no"), ("room", "0")])
def test_a_section_that_is_no_mapping_is_refused_not_read_as_absent(tmp_path, section, value):
    """``continuation: off`` used to load as the defaults (25 characters / 3 words): T3 stayed on."""
    with pytest.raises(MembersError, match=f"'{section}' must be a mapping"):
        _load_text(tmp_path, f"members: [Iris]\n{section}: {value}\n")
    cfg = _load_text(tmp_path, "members: [Iris, Elena]\ncontinuation: {max_chars: 0, max_words: 0}\n")
    taker = TurnTaker(cfg)
    taker.decide("Elena, what do you think?", SpeakerLabel("Alice", None, "mic"))
    assert taker.decide("ok", SpeakerLabel("Alice", None, "mic")).decided_by.value != "continuation"


def test_director_timeout_is_bounded():
    """A timeout past threading.TIMEOUT_MAX loaded, then the first director call raised
    OverflowError out of decide() (T5: a failure is never an error to the user)."""
    with pytest.raises(MembersError, match="timeout_s must be a number of seconds from 0 to 600"):
        parse_members({"members": ["Iris", "Elena"], "director": {"timeout_s": 1e10}})
    with pytest.raises(ValueError, match="director timeout must be 0 to 600"):
        TurnTaker(["Iris", "Elena"], director_timeout_s=1e10)


def test_a_name_colon_instructions_item_says_how_to_write_it(tmp_path):
    with pytest.raises(MembersError, match=r"member #1: '- Iris: …' reads 'Iris' as a key: write '- name: Iris'"):
        _load_text(tmp_path, "members:\n  - Iris: You are Iris, the designer.\n")
    with pytest.raises(MembersError, match="did you mean 'name'"):   # a misspelt key is still named
        _load_text(tmp_path, "members:\n  - nmae: Iris\n")


@pytest.mark.parametrize("alias", ["İris", "Ｉｒｉｓ", "Iri\u00ads", "Iris."])
def test_an_alias_that_a_mention_reads_as_another_members_name_is_refused(alias):
    """Mentions match after NFKC with invisible characters left out and İ read as I (T6): Elena
    with the alias İris took every "Iris, …" and Iris could never be named."""
    with pytest.raises(MembersError, match="is used by both"):
        parse_members({"members": [{"name": "Elena", "aliases": [alias]}, "Iris"]})

"""Turn-taking for meetings with one or more AI members (turn-taking.md, rules T1–T15).

Read in this order: :mod:`.members` (who is in the room, speak policies, ``members.yaml``),
:mod:`.ladder` (who answers: mention, group address, continuation, director, fallback),
:mod:`.director` (the optional model call), :mod:`.views` (what each member sees),
:mod:`.generate` (replies one after another), :mod:`.clients` (model clients),
:mod:`.replay` (the ladder over a committed meeting, for ``--explain``).
"""

from voicekit.turntaking.clients import (
    ChatMessage,
    ModelClient,
    ModelClientError,
    ModelTimeoutError,
    OpenAIChatClient,
)
from voicekit.turntaking.director import (
    DirectorRequest,
    DirectorVerdict,
    ModelDirector,
    parse_director_output,
)
from voicekit.turntaking.generate import MemberReply, generate_replies
from voicekit.turntaking.ladder import (
    ON_SPEAK_DECISION,
    DecidedBy,
    Decision,
    NameMatcher,
    RoomAddress,
    TurnTaker,
)
from voicekit.turntaking.members import (
    AnswerOnly,
    Floor,
    Member,
    MembersError,
    RoomConfig,
    TurnSource,
    answer_only,
    load_members,
    parse_members,
)
from voicekit.turntaking.replay import ReplayStep, explain_replay, replay_room
from voicekit.turntaking.views import TranscriptEntry, build_view, strip_own_name

__all__ = [
    "ON_SPEAK_DECISION",
    "AnswerOnly",
    "ChatMessage",
    "DecidedBy",
    "Decision",
    "DirectorRequest",
    "DirectorVerdict",
    "Floor",
    "Member",
    "MemberReply",
    "MembersError",
    "ModelClient",
    "ModelClientError",
    "ModelDirector",
    "ModelTimeoutError",
    "NameMatcher",
    "OpenAIChatClient",
    "ReplayStep",
    "RoomAddress",
    "RoomConfig",
    "TranscriptEntry",
    "TurnSource",
    "TurnTaker",
    "answer_only",
    "build_view",
    "explain_replay",
    "generate_replies",
    "load_members",
    "parse_director_output",
    "parse_members",
    "replay_room",
    "strip_own_name",
]

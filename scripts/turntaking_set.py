"""A scripted set of 200 meeting messages: how many reach the director, by rung.

Two AI members (Iris, a designer; Elena, an engineer) in a meeting with Alice and Bob. Each line
of the script is ``kind|speaker|text`` where kind is what the author meant the message to be
(``mention``, ``group``, ``followup``, ``ambiguous``); the ladder runs over the messages in order
with a counting director (it answers A/B alternately, no model), and every chosen member is
recorded as having replied, as in a live meeting.

    python scripts/turntaking_set.py [--members 2|3] [--verbose]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from voicekit.attribution import SpeakerLabel  # noqa: E402
from voicekit.turntaking import Member, TurnTaker  # noqa: E402

SCRIPT = """\
ambiguous|Alice|Thanks for joining, the agenda today is the lobby redesign and the budget.
mention|Alice|Iris, can you walk us through the new lobby sketches?
followup|Alice|nice
followup|Bob|why the curved desk?
mention|Bob|Elena, does the curved desk work with the existing wiring?
followup|Bob|really?
followup|Alice|ok
ambiguous|Alice|I'm worried the contractors underestimated the wiring work.
followup|Alice|how much?
group|Bob|What do you two think about moving the deadline by two weeks?
followup|Bob|hmm
ambiguous|Bob|The client said they want it done before the holidays no matter what.
mention|Alice|Elena, is that even feasible with the current crew?
followup|Alice|and with overtime?
followup|Bob|got it
mention|Bob|Iris, could the design be simplified to save time?
followup|Bob|which parts?
followup|Alice|the irises?
ambiguous|Alice|I love the irises in the planters, please keep them.
mention|Alice|Elena, what would removing the skylight save us?
followup|Alice|that's a lot
group|Bob|Iris and Elena, can you agree on a reduced scope by Friday?
followup|Bob|great
followup|Alice|What exactly do you mean by a reduced scope here?
ambiguous|Bob|hmm, okay
mention|Alice|Could you check that against the budget, Iris?
ambiguous|Bob|Guys like our last contractor never text back, so let's not repeat that.
followup|Bob|seriously
mention|Alice|Iris, send me the mood board afterwards.
followup|Alice|thanks
ambiguous|Alice|We also need to decide on the flooring supplier this week.
followup|Alice|any favourites?
mention|Bob|Elena, the oak supplier had delays last time, right?
followup|Bob|how long?
group|Alice|Everyone, please add your notes to the shared doc.
ambiguous|Bob|The shared doc is getting long, maybe we should split it by workstream.
followup|Bob|agreed?
mention|Alice|Iris, can you own the design workstream page?
followup|Alice|perfect
mention|Alice|Elena, and you the engineering page?
followup|Alice|ok good
ambiguous|Bob|Let's talk about the budget, we're at eighty percent already.
followup|Bob|already!
group|Bob|Both of you, where can we cut ten percent?
followup|Alice|only that?
ambiguous|Alice|Cutting the lighting upgrade feels like a false economy to me.
followup|Alice|no?
mention|Bob|Elena, how much of the lighting cost is labour?
followup|Bob|and materials?
mention|Alice|Iris, would cheaper fixtures ruin the look?
followup|Alice|be honest
ambiguous|Alice|Honestly I think the reception area matters more than the corridors.
followup|Bob|fair
group|Bob|You guys should sync on the corridor plan tomorrow.
followup|Alice|morning?
ambiguous|Alice|Morning is bad for me, I have the supplier call until noon.
mention|Bob|Iris, afternoon then?
followup|Bob|3 pm?
ambiguous|Bob|Next topic: accessibility, the ramp at the side entrance is too steep.
mention|Alice|Elena, what's the legal maximum slope?
followup|Alice|in degrees?
followup|Bob|and ours?
ambiguous|Alice|That means we have to rebuild the ramp, not just resurface it.
followup|Alice|right?
mention|Bob|Iris, can the new ramp fit the design language?
followup|Bob|show me
group|Alice|Elena and Iris, please produce one joint proposal for the ramp.
followup|Alice|by when?
ambiguous|Bob|I'll check with the city whether we need a new permit for that.
followup|Bob|probably yes
ambiguous|Alice|If we need a permit, the timeline slips by a month at least.
mention|Alice|Elena, can we start other work while the permit is pending?
followup|Alice|which work?
mention|Bob|Iris, does the lobby order matter for you?
followup|Bob|ok
group|Alice|Thanks everyone, that's a good plan.
ambiguous|Bob|Before we close, the client also asked about sustainability credentials.
followup|Bob|any ideas?
mention|Alice|Iris, do recycled materials change the palette much?
followup|Alice|examples?
mention|Bob|Elena, what about the heat pump instead of the gas boiler?
followup|Bob|cost?
followup|Alice|payback time?
ambiguous|Alice|A ten year payback is too long for this client, I think.
followup|Bob|maybe
ambiguous|Bob|There might be a subsidy for heat pumps in commercial buildings this year.
mention|Alice|Elena, can you look into that subsidy?
followup|Alice|thanks!
group|Bob|Did you all see the email from facilities about the weekend access?
followup|Bob|no?
ambiguous|Alice|They want all contractors badged by the end of the month.
followup|Alice|annoying
mention|Bob|Iris, are your freelancers badged already?
followup|Bob|all of them?
ambiguous|Bob|I'll send the list of names to facilities tonight.
ambiguous|Alice|Let's take a five minute break and then do the risk review.
ambiguous|Alice|Ok we're back, first risk is the supplier delays we discussed.
mention|Bob|Elena, how likely is a delay on the oak flooring?
followup|Bob|that high?
mention|Alice|Iris, is there an alternative to oak that looks similar?
followup|Alice|price?
followup|Bob|samples?
ambiguous|Bob|Second risk is the permit, which we already talked about.
ambiguous|Alice|Third risk is staff turnover on the contractor side.
group|Alice|What do you both think is the biggest risk overall?
followup|Alice|why?
ambiguous|Bob|I'd put the permit first, honestly, it blocks everything else.
followup|Bob|agree?
mention|Alice|Elena, can you write the mitigation plan for the permit risk?
followup|Alice|great
mention|Bob|Iris, and a fallback design if the ramp is refused?
followup|Bob|simple one
ambiguous|Alice|I think we should also budget a contingency of fifteen percent.
followup|Alice|too much?
ambiguous|Bob|Fifteen sounds high but the last project overran by twenty.
followup|Bob|right
group|Alice|Everybody ok with fifteen percent contingency?
followup|Alice|good
ambiguous|Bob|Alright, let's move to scheduling the next review meeting.
followup|Bob|Thursday?
ambiguous|Alice|Thursday doesn't work, I'm at the site visit all day.
mention|Bob|Elena, are you free Friday morning for the review?
followup|Bob|9?
mention|Alice|Iris, can you present the revised sketches then?
followup|Alice|all of them?
ambiguous|Bob|Please keep the presentation under twenty minutes this time.
followup|Bob|lol
group|Alice|All of you, please send slides by Thursday night.
followup|Alice|ok?
ambiguous|Bob|One more thing, the budget spreadsheet has a formula error in row forty.
followup|Bob|weird
mention|Alice|Elena, can you double-check the totals in that sheet?
followup|Alice|thanks
ambiguous|Alice|And the project name on the cover page is still the old one.
followup|Alice|oops
mention|Bob|Iris, can you fix the cover page template?
followup|Bob|cheers
ambiguous|Bob|I think that's everything on my list for today.
ambiguous|Alice|Same here, unless someone has an urgent item to raise.
group|Bob|Anything from you two before we wrap up?
followup|Bob|nothing?
ambiguous|Alice|Then let's end here and meet again on Friday.
ambiguous|Bob|Actually wait, I forgot the question about the signage vendor.
followup|Bob|sorry
mention|Alice|Iris, do you have a signage vendor you trust?
followup|Alice|name?
ambiguous|Bob|We used a vendor in Lyon last year and they were quite good.
followup|Alice|expensive?
mention|Bob|Elena, can signage lighting share the lobby circuit?
followup|Bob|safely?
ambiguous|Alice|I'd rather have a separate circuit to avoid trouble later.
followup|Alice|yes?
group|Bob|You two, please settle the signage question offline.
followup|Bob|thanks
ambiguous|Alice|For the minutes: decisions are the ramp rebuild, contingency, and the review on Friday.
followup|Alice|anything missing?
mention|Bob|Elena, did we decide on the heat pump?
followup|Bob|not yet?
ambiguous|Alice|Let's mark the heat pump as pending the subsidy research.
followup|Alice|fine
mention|Alice|Iris, please share the sketches in the channel.
followup|Alice|now?
ambiguous|Bob|My camera is acting up, I might drop off in a minute.
followup|Bob|sorry
ambiguous|Alice|No problem, we're almost done anyway.
group|Alice|Thank you all for the productive session.
followup|Bob|bye
ambiguous|Bob|Oh, before I go, the client wants a one page summary by Monday.
mention|Alice|Elena, could you draft the technical half?
followup|Alice|short
mention|Bob|Iris, and the design half with two images?
followup|Bob|max two
ambiguous|Alice|I'll merge both halves and send it to the client on Monday morning.
followup|Alice|ok?
group|Bob|Anaïs asked if you guys could join the Monday call too.
ambiguous|Alice|Anaïs runs the client's facilities team, so that call matters.
followup|Alice|right
mention|Bob|Elena, bring the permit timeline to that call please.
followup|Bob|printed
mention|Alice|Iris, bring the ramp options.
followup|Alice|both
ambiguous|Bob|I think the client will push for the cheaper ramp option.
followup|Bob|probably
ambiguous|Alice|We should explain why the cheaper option fails the slope rule.
followup|Alice|clearly
mention|Bob|Elena, can you prepare one slide on the slope rule?
followup|Bob|simple
ambiguous|Alice|Remember the client's CEO doesn't like dense slides.
followup|Alice|at all
group|Bob|Everyone clear on the action items?
followup|Bob|good
ambiguous|Alice|I'll send the recording and the minutes after lunch.
followup|Alice|cool
ambiguous|Bob|Thanks Alice, and thanks for keeping us on time today.
followup|Bob|really
mention|Alice|Iris, nice work on the sketches by the way.
followup|Alice|seriously
mention|Bob|Elena, and thanks for the numbers.
followup|Bob|very clear
ambiguous|Alice|Okay, signing off now, talk to you on Friday.
"""


def parse_script() -> list[tuple[str, str, str]]:
    rows = []
    for line in SCRIPT.splitlines():
        kind, speaker, text = line.split("|", 2)
        rows.append((kind, speaker, text))
    return rows


class CountingDirector:
    """Stand-in for a model: counts calls and answers A/B alternately (never chime-in)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request) -> str:
        self.calls += 1
        key = request.keys[self.calls % len(request.keys)]
        if len(request.keys) <= 2:
            return '{"responder": "%s", "chime_in": false}' % key
        return '{"scores": {"%s": 0.9}, "chime_in": false}' % key


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, choices=(2, 3), default=2, help="AI members in the generated room")
    parser.add_argument("--verbose", action="store_true", help="print every decision")
    args = parser.parse_args(argv)
    rows = parse_script()
    assert len(rows) == 200, len(rows)
    members = [Member("Iris", "Designer."), Member("Elena", "Engineer.")]
    if args.members == 3:
        members.append(Member("Mei", "Project coordinator."))
    director = CountingDirector()
    taker = TurnTaker(members, director=director)
    by_rung: collections.Counter[str] = collections.Counter()
    table: collections.Counter[tuple[str, str]] = collections.Counter()
    for kind, speaker, text in rows:
        d = taker.decide(text, SpeakerLabel(speaker, None, "mic"))
        by_rung[d.decided_by.value] += 1
        table[(kind, d.decided_by.value)] += 1
        if args.verbose:
            print(f"{kind:<9} {d.decided_by.value:<13} {','.join(d.responders):<12} {speaker}: {text}")
        for name in d.responders:
            taker.record_reply(name)
    print(f"{len(rows)} messages, {len(members)} members ({', '.join(m.name for m in members)})")
    rungs = ["mention", "group_address", "continuation", "director", "fallback", "silence"]
    for rung in rungs:
        if by_rung[rung]:
            print(f"  {rung:<14} {by_rung[rung]:4d}  ({100 * by_rung[rung] / len(rows):.1f} %)")
    print(f"reached the director: {director.calls} of {len(rows)} ({100 * director.calls / len(rows):.1f} %)")
    kinds = ["mention", "group", "followup", "ambiguous"]
    print("\nintended kind -> rung")
    print(f"  {'':<10}" + "".join(f"{r:>14}" for r in rungs[:5]))
    for kind in kinds:
        print(f"  {kind:<10}" + "".join(f"{table[(kind, r)]:14d}" for r in rungs[:5]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The LiveKit room bot with the real `livekit` SDK against ../shared/tools/livekit_test_sfu.py.

WebRTC media needs a non-loopback interface, so the room tests run inside a private network
namespace (../shared/tools/netns-run.sh, root or an unprivileged user namespace):
`test_livekit_in_private_network_namespace` re-runs this module there. Skipped (with the reason)
when the SDK is missing and VOICEKIT_REQUIRE_LIVEKIT is unset; CI sets it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from _capture_common import EVAL, ROOT, TOOLS, components, required

IN_NETNS = bool(os.environ.get("LIVEKIT_TEST_NETNS"))
KEY, SECRET = "voicekit-test", "voicekit-test-secret-0123456789abcdef-0123"
JFK = EVAL / "faster_whisper" / "jfk.flac"
LIBRI = EVAL / "librivox" / "sense_and_sensibility_01_austen_64kb-0870.wav"
LIBRI2 = EVAL / "librivox" / "sense_and_sensibility_01_austen_64kb-0890.wav"
JFK_TEXT = "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."
LIBRI_TEXT = ("and mister john dashwood had then leisure to consider how much there might be prudently in his "
              "power to do for them")
LIBRI2_TEXT = "unless to be rather cold hearted and rather selfish is to be ill disposed"


def _sdk_or_skip() -> None:
    try:
        import aiortc  # noqa: F401
        import livekit.api  # noqa: F401
        from livekit import rtc  # noqa: F401
    except ImportError as exc:
        if required("VOICEKIT_REQUIRE_LIVEKIT"):
            pytest.fail(f"VOICEKIT_REQUIRE_LIVEKIT is set but the LiveKit SDK is missing ({exc})")
        pytest.skip(f"LiveKit SDK missing ({exc}): pip install livekit livekit-api aiortc websockets pyjwt "
                    "(VOICEKIT_REQUIRE_LIVEKIT=1 makes this a failure)")


in_netns = pytest.mark.skipif(not IN_NETNS, reason="runs inside ../shared/tools/netns-run.sh; started by "
                                                    "test_livekit_in_private_network_namespace")


def test_livekit_in_private_network_namespace():
    """Re-run the room tests of this module inside a private network namespace."""
    if IN_NETNS:
        pytest.skip("already inside the namespace")
    _sdk_or_skip()
    probe = subprocess.run([str(TOOLS / "netns-run.sh"), "true"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        reason = f"cannot create a network namespace ({probe.stderr.strip()[:200]}); run as root"
        if required("VOICEKIT_REQUIRE_LIVEKIT"):
            pytest.fail(reason)
        pytest.skip(reason)
    run = subprocess.run([str(TOOLS / "netns-run.sh"), sys.executable, "-m", "pytest", __file__, "-q", "-s",
                          "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    out = run.stdout
    print("\n".join(line for line in out.splitlines() if not line.startswith("livekit")))
    assert run.returncode == 0, out[-6000:] + run.stderr[-3000:]
    assert " passed" in out and "failed" not in out


def load_48k(path) -> np.ndarray:
    from voicekit.audio import load_audio, resample

    x = resample(load_audio(path), 16000, 48000)
    return (np.clip(x, -1, 1) * 32767).astype(np.int16)


class Person:
    """A participant: joins, publishes a microphone, speaks a recording once, then silence."""

    def __init__(self, srv, identity: str, name: str | None, pcm: np.ndarray, room: str = "standup") -> None:
        self.srv, self.identity, self.name, self.pcm, self.room_name = srv, identity, name, pcm, room
        self.done = asyncio.Event()
        self.spoke_until: float | None = None

    async def join(self) -> "Person":
        from livekit import rtc

        self.room = rtc.Room()
        await self.room.connect(self.srv.url, self.srv.token(self.identity, room=self.room_name, name=self.name))
        self.source = rtc.AudioSource(48000, 1)
        track = rtc.LocalAudioTrack.create_audio_track("mic", self.source)
        await self.room.local_participant.publish_track(
            track, rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE))
        self.task = asyncio.ensure_future(self._talk())
        return self

    async def _talk(self) -> None:
        from livekit import rtc

        n = 480
        silence = np.zeros(n, np.int16).tobytes()
        await asyncio.sleep(0.5)
        for i in range(0, len(self.pcm) - n, n):
            await self.source.capture_frame(rtc.AudioFrame(self.pcm[i:i + n].tobytes(), 48000, 1, n))
        await self.source.wait_for_playout()
        self.spoke_until = time.monotonic()
        self.done.set()
        while True:
            await self.source.capture_frame(rtc.AudioFrame(silence, 48000, 1, n))

    async def leave(self) -> None:
        self.task.cancel()
        await self.room.disconnect()


async def until(cond, timeout: float, what: str) -> None:
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < timeout, f"timeout ({timeout} s) waiting for {what}"
        await asyncio.sleep(0.05)


@in_netns
def test_bot_lanes_per_participant(tmp_path):
    """Bot joins first; Diane and Sheila join and speak different recordings; Sheila leaves; an
    unnamed participant joins later. Each person's turns carry their name and their words."""
    _sdk_or_skip()
    sys.path.insert(0, str(TOOLS))
    from livekit_test_sfu import LiveKitTestServer

    from voicekit.capture import CaptureError
    from voicekit.capture.livekit_bot import LiveKitBot, mint_token
    from voicekit.evaluation import wer
    from voicekit.store import MeetingStore

    comps = components()
    store = MeetingStore(tmp_path / "meeting.sqlite")
    report: list[str] = []

    async def scenario():
        async with LiveKitTestServer(api_key=KEY, api_secret=SECRET) as srv:
            bad = mint_token(KEY, "wrong-secret-" + "x" * 32, room="standup")
            with pytest.raises(CaptureError, match=r"refused the bot's token .*401"):
                await LiveKitBot(srv.url, bad, components=comps).connect()

            bot = LiveKitBot(srv.url, mint_token(KEY, SECRET, "standup", name="Meeting notes"),
                             components=comps, store=store)
            await bot.connect()
            assert bot.room_name == "standup" and not bot.room.remote_participants
            diane = await Person(srv, "diane", "Diane", load_48k(JFK)).join()
            sheila = await Person(srv, "sheila", "Sheila", load_48k(LIBRI)).join()
            await asyncio.wait_for(sheila.done.wait(), 60)
            await asyncio.sleep(2.5)
            sheila_lane = next(l for l in bot.lanes.values() if l.identity == "sheila")
            left_at = time.monotonic() - bot.t0
            await sheila.leave()
            await until(lambda: sheila_lane.closed, 15, "Sheila's lane to end")
            await asyncio.to_thread(sheila_lane.thread.join, 60)
            assert not sheila_lane.thread.is_alive()
            diane_lane = next(l for l in bot.lanes.values() if l.identity == "diane")
            assert not diane_lane.closed and diane_lane.thread.is_alive()

            anon = await Person(srv, "anon-7f3a", None, load_48k(LIBRI2)).join()
            await asyncio.wait_for(diane.done.wait(), 60)
            await asyncio.wait_for(anon.done.wait(), 60)
            await asyncio.sleep(2.5)
            await bot.close()
            await diane.leave()
            await anon.leave()
            return bot, left_at

    bot, left_at = asyncio.run(asyncio.wait_for(scenario(), 240))
    lanes = {l.identity: l for l in bot.lanes.values()}
    assert set(lanes) == {"diane", "sheila", "anon-7f3a"}
    assert sorted(l.channel for l in lanes.values()) == ["standup/1", "standup/2", "standup/3"]
    assert lanes["anon-7f3a"].channel == "standup/3"          # joined last
    assert all(l.error is None for l in lanes.values())
    for who, name, ref in (("diane", "Diane", JFK_TEXT), ("sheila", "Sheila", LIBRI_TEXT),
                           ("anon-7f3a", None, LIBRI2_TEXT)):
        lane = lanes[who]
        turns = lane.turns
        text = " ".join(t.text for t in turns)
        err = wer(ref, text)
        lat = [t.emitted_at - t.end for t in turns]
        report.append(f"{lane.channel} {lane.label!r}: {len(turns)} turns, WER {err:.2f} vs reference, "
                      f"offset {lane.offset:.2f} s, latency end->commit "
                      f"{', '.join(f'{x:.2f}' for x in lat)} s: {text}")
        assert turns, f"no turns from {who}"
        assert err <= 0.2, (who, text)
        for t in turns:
            assert t.channel == lane.channel
            assert who not in (t.speaker, t.sender_name, t.metadata.get("sender_name"))
            if name:
                assert t.speaker == name and t.metadata["sender_name"] == name and t.sender_name == name
            else:
                assert t.speaker == f"@{lane.channel}" and "sender_name" not in t.metadata
            assert t.metadata["participant_id"] == who
            assert t.start >= lane.offset and t.emitted_at >= t.end
    assert all(t.end <= left_at + 0.5 for t in lanes["sheila"].turns)
    assert all(t.start >= left_at for t in lanes["anon-7f3a"].turns)
    assert "crocodile" not in " ".join(t.text for t in bot.turns)
    stored = store.turns()
    assert [t.turn_id for t in stored] == sorted((t.turn_id for t in bot.turns),
                                                 key=lambda i: next(t.start for t in bot.turns if t.turn_id == i))
    assert [t.start for t in stored] == sorted(t.start for t in stored)
    assert {t.sender_name for t in stored} == {"Diane", "Sheila", "@standup/3"}
    lat = sorted(t.emitted_at - t.end for t in bot.turns)
    report.append(f"median latency from end of utterance to committed turn: {lat[len(lat) // 2]:.2f} s "
                  f"(max {lat[-1]:.2f} s, {len(lat)} turns)")
    print("\n" + "\n".join(report))
    assert lat[len(lat) // 2] < 8.0

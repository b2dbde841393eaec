"""Participants for tests/test_capture_livekit.py, in their own process (real `livekit` SDK).

    python _livekit_people.py URL API_KEY API_SECRET ROOM

Schedule: Diane (jfk.flac) and Sheila (librivox 0870) join and speak at the same time; Sheila
leaves 2.5 s after she finished; then an unnamed participant ("anon-7f3a", librivox 0890) joins
and speaks. Everyone then sends silence until stdin closes, and leaves. One JSON line per event on
stdout: {"event": "joined"|"done"|"left", "who": identity, "t": time.monotonic()} (CLOCK_MONOTONIC
is system-wide, so the test compares it with its own clock), then {"event": "end"}.

A separate process keeps the publishers' real-time pacing away from the bot's Whisper threads.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import numpy as np
from livekit import api, rtc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from voicekit.audio import load_audio, resample  # noqa: E402

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"
if not EVAL.is_dir():
    EVAL = Path("/work/shared/eval")


def emit(event: str, who: str = "") -> None:
    print(json.dumps({"event": event, "who": who, "t": time.monotonic()}), flush=True)


def pcm48(path: Path) -> np.ndarray:
    x = resample(load_audio(path), 16000, 48000)
    return (np.clip(x, -1, 1) * 32767).astype(np.int16)


class Person:
    def __init__(self, url: str, token: str, identity: str, pcm: np.ndarray) -> None:
        self.url, self.token, self.identity, self.pcm = url, token, identity, pcm
        self.done = asyncio.Event()

    async def join(self) -> "Person":
        self.room = rtc.Room()
        await self.room.connect(self.url, self.token)
        self.source = rtc.AudioSource(48000, 1)
        track = rtc.LocalAudioTrack.create_audio_track("mic", self.source)
        await self.room.local_participant.publish_track(
            track, rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE))
        emit("joined", self.identity)
        self.task = asyncio.ensure_future(self._talk())
        return self

    async def _talk(self) -> None:
        n = 480
        silence = np.zeros(n, np.int16).tobytes()
        for _ in range(50):   # 0.5 s of silence first: the subscription settles
            await self.source.capture_frame(rtc.AudioFrame(silence, 48000, 1, n))
        for i in range(0, len(self.pcm) - n, n):
            await self.source.capture_frame(rtc.AudioFrame(self.pcm[i:i + n].tobytes(), 48000, 1, n))
        await self.source.wait_for_playout()
        emit("done", self.identity)
        self.done.set()
        while True:
            await self.source.capture_frame(rtc.AudioFrame(silence, 48000, 1, n))

    async def leave(self) -> None:
        self.task.cancel()
        await self.room.disconnect()
        emit("left", self.identity)


async def main(url: str, key: str, secret: str, room: str) -> None:
    def token(identity: str, name: str | None) -> str:
        t = api.AccessToken(key, secret).with_identity(identity)
        if name:
            t = t.with_name(name)
        return t.with_grants(api.VideoGrants(room_join=True, room=room)).to_jwt()

    diane = await Person(url, token("diane", "Diane"), "diane", pcm48(EVAL / "faster_whisper" / "jfk.flac")).join()
    sheila = await Person(url, token("sheila", "Sheila"), "sheila",
                          pcm48(EVAL / "librivox" / "sense_and_sensibility_01_austen_64kb-0870.wav")).join()
    await sheila.done.wait()
    await asyncio.sleep(2.5)
    await sheila.leave()
    await asyncio.sleep(1.0)
    anon = await Person(url, token("anon-7f3a", None), "anon-7f3a",
                        pcm48(EVAL / "librivox" / "sense_and_sensibility_01_austen_64kb-0890.wav")).join()
    await diane.done.wait()
    await anon.done.wait()
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)   # until the test closes stdin
    await diane.leave()
    await anon.leave()
    emit("end")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))

"""Participants for tests/test_capture_livekit.py, in their own process (real `livekit` SDK).

    python _livekit_people.py URL API_KEY API_SECRET ROOM

Driven by lines on stdin: ``join IDENTITY NAME|- FILE`` (join, publish a microphone, send
silence), ``speak IDENTITY`` (speak FILE once, then silence again), ``leave IDENTITY``, ``quit``
(everyone leaves). One JSON line per event on stdout: {"event": "joined"|"done"|"left"|"end",
"who": identity, "t": time.monotonic()} (CLOCK_MONOTONIC is system-wide, so the test compares it
with its own clock). FILE is relative to ../shared/eval.

A separate process keeps the publishers' real-time pacing away from the bot's Whisper threads.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from livekit import api, rtc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from voicekit.audio import load_audio, resample  # noqa: E402

EVAL = Path(os.environ.get("VOICEKIT_EVAL_DIR", Path(__file__).resolve().parents[2] / "shared" / "eval"))


def emit(event: str, who: str = "") -> None:
    print(json.dumps({"event": event, "who": who, "t": time.monotonic()}), flush=True)


def pcm48(path: Path) -> np.ndarray:
    x = resample(load_audio(path), 16000, 48000)
    return (np.clip(x, -1, 1) * 32767).astype(np.int16)


class Person:
    def __init__(self, url: str, token: str, identity: str, pcm: np.ndarray) -> None:
        self.url, self.token, self.identity, self.pcm = url, token, identity, pcm
        self.go = asyncio.Event()

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
        silence = rtc.AudioFrame(np.zeros(n, np.int16).tobytes(), 48000, 1, n)
        while not self.go.is_set():
            await self.source.capture_frame(silence)
        for i in range(0, len(self.pcm) - n, n):
            await self.source.capture_frame(rtc.AudioFrame(self.pcm[i:i + n].tobytes(), 48000, 1, n))
        await self.source.wait_for_playout()
        emit("done", self.identity)
        while True:
            await self.source.capture_frame(silence)

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

    people: dict[str, Person] = {}
    loop = asyncio.get_running_loop()
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).split()
        if not line or line[0] == "quit":
            break
        if line[0] == "join":
            who, name, path = line[1], line[2], line[3]
            people[who] = await Person(url, token(who, None if name == "-" else name), who, pcm48(EVAL / path)).join()
        elif line[0] == "speak":
            people[line[1]].go.set()
        elif line[0] == "leave":
            await people.pop(line[1]).leave()
    for p in people.values():
        await p.leave()
    emit("end")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))

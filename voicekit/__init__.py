"""voicekit: a voice meeting assistant.

The flow a speaker turn takes, one module per stage:

    audio (decode, normalize, resample) -> sources (replay, mic, livekit) -> vad (endpointer)
    -> stt (faster-whisper) -> diarization (speaker embeddings, online assignment, refinement)
    -> turns (Word, SpeakerTurn records) -> hooks (ON_TRANSCRIPTION) -> store (SQLite)
    -> outputs (JSON, RTTM, SRT, WebVTT, text), realtime (live model sessions), turntaking
    (which AI member answers), attribution (speaker labels in what a model receives).

pipeline wires the stages (Pipeline, PipelineOptions, Components); voiceprints keeps known
voices; the bundled Whisper weights are found by the top-level ``models`` package. A whole
program using them: docs/library.md.
"""

import os as _os

__version__ = "0.1.0"

# ONNX Runtime (1.29+; it runs the Silero VAD, and pyannote.audio imports it) otherwise writes a
# device id and queues usage events for Microsoft in ~/.cache/Microsoft/DeveloperTools/.onnxruntime/
# as it is imported: off unless the user set these (docs/privacy.md). ORT_DISABLE_TELEMETRY stops it
# all in 1.32; ORT_TELEMETRY_DISABLED is the documented opt-out, complete since microsoft/onnxruntime#29843.
_os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
_os.environ.setdefault("ORT_TELEMETRY_DISABLED", "1")

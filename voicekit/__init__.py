"""voicekit: a voice meeting assistant.

The flow a speaker turn takes, one module per stage:

    audio (decode, normalize, resample) -> sources (replay, mic, livekit) -> vad (endpointer)
    -> stt (faster-whisper) -> diarization (speaker embeddings, online assignment, refinement)
    -> turns (Word, SpeakerTurn records) -> hooks (ON_TRANSCRIPTION) -> store (SQLite)
    -> outputs (JSON, RTTM, SRT, WebVTT, text)
"""

__version__ = "0.1.0"

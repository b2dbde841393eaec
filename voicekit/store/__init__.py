"""Meeting stores: where committed turns live (SQLite by default)."""

from voicekit.store.sqlite import MeetingStore, ResumePoint, StoreError

__all__ = ["MeetingStore", "ResumePoint", "StoreError"]

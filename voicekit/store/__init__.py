"""Meeting stores: where committed turns live (SQLite by default)."""

from voicekit.store.sqlite import MeetingStore, StoreError

__all__ = ["MeetingStore", "StoreError"]

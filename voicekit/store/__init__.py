"""Meeting stores: where committed turns live (SQLite by default)."""

from voicekit.store.sqlite import MeetingStore, ResumePoint, StoreAccess, StoreError, access_problem

__all__ = ["MeetingStore", "ResumePoint", "StoreAccess", "StoreError", "access_problem"]

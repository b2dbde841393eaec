# rename.py
import re
from voicekit.hooks import HookResult

def on_transcription(turn):
    m = re.search(r"\b(?i:this is|I'm|I am) ([A-Z][a-z]+)", turn.text)
    return HookResult.rename(m.group(1)) if m else None

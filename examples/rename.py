# rename.py
import re
from voicekit.hooks import HookResult

def on_transcription(turn):
    m = re.search(r"\b(?i:this is|I'm|I am) ([^\W\d_][\w'’-]*)", turn.text)
    name = m.group(1) if m else ""
    return HookResult.rename(name) if name[:1].isupper() and not name.isupper() else None

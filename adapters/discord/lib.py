"""discord.py, imported once for the whole adapter.

discord.py 2.7.1 imports the standard library's `audioop` for voice playback, which Python
3.11+ reports as deprecated at import time; Threadline uses no voice, so that one warning is
silenced here (tests run with warnings as errors). The voice client's "PyNaCl is not
installed" (and DAVE) start-up warnings are switched off for the same reason.
"""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", r"'audioop' is deprecated", DeprecationWarning)
    import discord
    import discord.gateway
    import discord.http

discord.VoiceClient.warn_nacl = False
discord.VoiceClient.warn_dave = False

__all__ = ["discord"]

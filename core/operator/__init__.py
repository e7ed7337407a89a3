"""What the operator console (bot/console) reads and does, platform-neutral: sign-in links and
their sessions (`links`), and the overview's figures (`overview`)."""

"""The Slack adapter (slack-bolt): HTTP mode in `threadline serve`, Socket Mode in `run`."""

"""Voice replies: text prepared for speech, cut into segments, synthesized by a `SpeechEngine`
(local engines in worker processes), merged and encoded for the platform."""

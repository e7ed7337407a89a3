"""Scheduled digests: subscriptions, schedules, run claims, kinds and the scheduler."""

"""Discord adapter: mentions open threads, conversations continue there, `/threadline` app
commands. Entry point: `adapters.discord.client.run_discord`."""

"""Code: repositories, walking and incremental indexing, and the exact code tools."""

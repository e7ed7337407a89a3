"""Feedback on answers: 👍/👎 under each answer, the ratings store, `/feedback` and the
`feedback` digest kind."""

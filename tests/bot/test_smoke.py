from tests.conftest import BotHarness
from tests.support.fakes.openai_server import FakeOpenAI


async def test_plain_answer(bot: BotHarness, fake_llm: FakeOpenAI) -> None:
    fake_llm.reply("Hello from the model")
    reply = await bot.send("hi there")
    assert reply.ok, reply
    assert reply.text == "Hello from the model"
    sent = fake_llm.requests[0]
    assert sent["model"] == "fake-model"
    assert sent["messages"][-1] == {"role": "user", "content": "hi there"}

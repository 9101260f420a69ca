"""Large-language-model stages' one shared part: a chat endpoint of the OpenAI-compatible shape (`chat`).

Generated questions (`chunkscope.evaluation.question_gen`) ask it; nothing here knows what is asked.
"""

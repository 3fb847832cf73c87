"""Recurrent layers (MindSpore 1.8 ``nn.RNN``/``nn.LSTM``/``nn.GRU`` and their cells)."""

__all__: list[str] = []

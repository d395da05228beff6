"""Graph IR: the model as the compiler sees it, with exact quantization parameters."""

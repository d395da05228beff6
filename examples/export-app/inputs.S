/* The inputs the app runs the model on: the bytes of inputs.bin (the Makefile copies INPUTS there), in flash. */
    .section .rodata.app_inputs, "a"
    .balign 16
    .globl app_inputs
app_inputs:
    .incbin "inputs.bin"
    .globl app_inputs_end
app_inputs_end:

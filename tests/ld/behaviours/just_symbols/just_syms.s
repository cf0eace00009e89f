# the file -R names: only its symbols are taken (absolute), nothing of it is linked
        .globl fixed_a
        .set fixed_a, 0x12345678
        .globl fixed_b
        .set fixed_b, 0x00abcdef
        .weak weak_one
        .set weak_one, 0x4242
        .text
        .globl fixed_fn
        .type fixed_fn, @function
        nop
fixed_fn:
        ret
        .section .note.GNU-stack,"x",@progbits

	.section .note.GNU-stack,"x",@progbits

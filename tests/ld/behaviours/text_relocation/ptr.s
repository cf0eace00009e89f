# A pointer to a local function in .rodata: a PIE needs a RELATIVE there, in a read-only segment
	.section .rodata
	.globl table
	.p2align 3
table: .quad answer
	.text
answer:
	movl $42, %eax
	ret
	.section .note.GNU-stack,"",@progbits

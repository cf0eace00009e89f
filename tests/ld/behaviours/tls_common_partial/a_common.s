# An assembler-made TLS common (gcc makes none from C): the first object that names tvar.
	.tls_common tvar,4,4
	.text
	.globl get_common
	.type get_common, @function
get_common:
	movq %fs:0, %rax
	addq tvar@gottpoff(%rip), %rax
	movl (%rax), %eax
	ret
	.section .note.GNU-stack,"",@progbits

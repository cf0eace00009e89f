# Assembler-made TLS commons (gcc makes none from C) that nothing else defines: GNU ld gives them
# .tbss (its *(.tcommon)), after the inputs' own .tbss.
	.tls_common tvar,4,4
	.tls_common tarr,64,64
	.text
	.globl get_common
	.type get_common, @function
get_common:
	movq %fs:0, %rax
	addq tvar@gottpoff(%rip), %rax
	movl (%rax), %eax
	ret
	.section .note.GNU-stack,"",@progbits

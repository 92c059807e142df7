/* copy_kernel_image.S - the copy kernel's fatbin (src/copy_kernel.fatbin, made
 * by nvcc at build time from copy_kernel.cu), embedded in the library as bytes
 * for cuModuleLoadData (engine_kernel.c).  Hidden: nothing of it is exported. */
    .section .rodata
    .balign 64
    .globl cb_kernel_image
    .hidden cb_kernel_image
    .type cb_kernel_image, @object
cb_kernel_image:
    .incbin "src/copy_kernel.fatbin"
    .globl cb_kernel_image_end
    .hidden cb_kernel_image_end
cb_kernel_image_end:
    .byte 0
    .size cb_kernel_image, . - cb_kernel_image
    .section .note.GNU-stack,"",@progbits

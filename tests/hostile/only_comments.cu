// TODO: write the kernel
/* nothing here yet */

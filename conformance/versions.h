/* weft-conformance versions: which plugin ABI tables a library exports and which one weft and
 * each stock NCCL release would load (versions.c). */
#ifndef WEFT_CONFORMANCE_VERSIONS_H
#define WEFT_CONFORMANCE_VERSIONS_H

/* argv: the libraries. 0 when each exports some table, 1 otherwise, 2 on a usage error. */
int versions_main(int argc, char** argv);

#endif

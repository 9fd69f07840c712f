/**
 * The service's side of a producer's shared memory buffer: moving committed chunks out,
 * scraping chunks still being written, trusting nothing read from the SMB. Not exported:
 * the service uses it, applications never see an SMB from this side.
 */
package dev.ffmtrace.tracing.service.reader;

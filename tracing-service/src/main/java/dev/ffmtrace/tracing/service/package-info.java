/**
 * The in-process tracing service: producers connect with a sealed shared memory buffer
 * and register data sources, sessions started from a TraceConfig get TraceBufferV2
 * buffers and start the data sources they name, and the service moves the producers'
 * chunks into those buffers and writes them out as Perfetto trace files.
 * {@link dev.ffmtrace.tracing.service.TracingService} is the entry point, and each class
 * says which threads may call what. {@link dev.ffmtrace.tracing.service.ProducerPort}
 * serves the service to producers in other processes over Perfetto's IPC.
 */
package dev.ffmtrace.tracing.service;

/**
 * The {@code ./ffmtrace} command line: {@code record} runs a tracing session from a text
 * TraceConfig, {@code convert} and {@code dump} translate between text format and trace
 * files, and {@code demo} shows two processes sharing a sealed memfd.
 */
package dev.ffmtrace.cli;

/**
 * The SDK: {@link dev.ffmtrace.tracing.sdk.Tracing#initialize} once with the backends to
 * use, then {@link dev.ffmtrace.tracing.sdk.DataSource}s written once and traced into from
 * any thread, into every session that started them, whichever backend the session runs on.
 */
package dev.ffmtrace.tracing.sdk;

/**
 * Complete programs, each a class with a {@code main}, that use ffmtrace the way an
 * application would; docs/library.md and docs/join-a-service.md show them verbatim.
 * The module's tests run every one of them and decode what it wrote.
 */
package dev.ffmtrace.examples;

/**
 * jcstress tests of the lock-free protocols: one {@code *Stress} class per structure,
 * nested scenarios each stating the invariant its FORBIDDEN outcomes guard.
 */
package dev.ffmtrace.stress;

package dev.ffmtrace.tracing.service;

/**
 * Why a data source a session's config names writes nothing into the session at this
 * moment: see {@link TracingSession#warnings()}.
 *
 * @param dataSource the data source's name, as the config gives it
 * @param configIndex the index of its entry among the config's data sources
 * @param reason why no producer writes it into the session
 */
public record DataSourceWarning(String dataSource, int configIndex, Reason reason) {
    /** Why no producer writes a data source into the session. */
    public enum Reason {
        /** No connected producer has registered it; the session starts it when one does. */
        NOT_REGISTERED("no connected producer has registered it (the session starts it when one does)"),
        /**
         * Every producer that offers it serves as many other sessions as it can at once (8
         * for a producer in another process, 1 for one in this process); the session starts
         * it when one of them stops.
         */
        TAKEN_BY_ANOTHER_SESSION("every producer that offers it serves as many other sessions as it can"),
        /** An earlier entry of the same config started it, and its producers can start no more instances. */
        NAMED_TWICE("an earlier entry of this config started it, and its producers can start no more instances");

        private final String explanation;

        Reason(String explanation) {
            this.explanation = explanation;
        }

        /** The reason in words, for messages. */
        public String explanation() {
            return explanation;
        }
    }

    /** The warning in words: {@code data source "gpu" (#2): no connected producer has registered it (...)}. */
    public String message() {
        return "data source \"" + dataSource + "\" (#" + configIndex + "): " + reason.explanation();
    }

    @Override
    public String toString() {
        return message();
    }
}

// The sinks' names, in a module of their own: the CLI checks --sink (a dry-run too) without loading a sink.

/** Sink names accepted by --sink. */
export const SINK_NAMES = ['hubspot', 'webhook', 'jsonl', 'postgres'] as const;
export type SinkName = (typeof SINK_NAMES)[number];

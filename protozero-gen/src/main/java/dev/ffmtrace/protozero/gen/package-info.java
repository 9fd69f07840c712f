/**
 * The build-time code generator: reads protoc's descriptor set and writes ProtoZero
 * writer and decoder classes. Runs during the build of the proto modules, never at run time.
 */
package dev.ffmtrace.protozero.gen;

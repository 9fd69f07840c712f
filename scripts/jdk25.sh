# Sourced by ./ffmtrace, ./mvnw and ./run-tests: finds a JDK 25 or newer and
# exports JAVA_HOME. Looks at JAVA_HOME first, then the java on the PATH, then
# the usual JVM directories; stops with one line when there is none.

ffmtrace_jdk_major() {
  local home=$1 version=""
  [ -x "$home/bin/java" ] && [ -x "$home/bin/javac" ] || return 1
  if [ -f "$home/release" ]; then
    version=$(sed -n 's/^JAVA_VERSION="\([^"]*\)".*/\1/p' "$home/release")
  fi
  if [ -z "$version" ]; then
    version=$("$home/bin/java" -XshowSettings:properties -version 2>&1 |
      sed -n 's/^ *java.specification.version = //p')
  fi
  version=${version#1.}
  echo "${version%%[.+-]*}"
}

ffmtrace_find_jdk() {
  local candidates=() home major
  [ -n "${JAVA_HOME:-}" ] && candidates+=("$JAVA_HOME")
  if command -v java >/dev/null 2>&1; then
    home=$(readlink -f "$(command -v java)")
    candidates+=("${home%/bin/java}")
  fi
  for home in /usr/lib/jvm/* /usr/java/* /opt/java/* /opt/jdk* \
              "$HOME"/.sdkman/candidates/java/* "$HOME"/.jdks/* \
              /Library/Java/JavaVirtualMachines/*/Contents/Home; do
    [ -d "$home" ] && candidates+=("$home")
  done
  for home in "${candidates[@]}"; do
    major=$(ffmtrace_jdk_major "$home") || continue
    if [ -n "$major" ] && [ "$major" -ge 25 ] 2>/dev/null; then
      echo "$home"
      return 0
    fi
  done
  return 1
}

if ! JAVA_HOME=$(ffmtrace_find_jdk); then
  echo "ffmtrace needs a JDK 25 or newer: install one (e.g. Debian/Ubuntu package temurin-25-jdk or openjdk-25-jdk) or set JAVA_HOME to it." >&2
  # Sourced (the scripts, or a user's shell): fail the caller without closing a shell.
  return 1 2>/dev/null || exit 1
fi
export JAVA_HOME

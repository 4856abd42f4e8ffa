package io.github.preemptd.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A {@code preemptd serve} child process on a loopback port: $PREEMPTD_BIN or
 * {@code <repo>/target/debug/preemptd} (built by {@code cargo build}).
 */
final class PreemptdServer implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final List<String> extraArgs;
  private Process process;
  private String address;

  private PreemptdServer(List<String> extraArgs) {
    this.extraArgs = extraArgs;
  }

  static Path repoRoot() {
    return Path.of(System.getProperty("preemptd.root", "../..")).toAbsolutePath().normalize();
  }

  /**
   * The server binary. Without one, the tests that need it are skipped with a message saying
   * so (so {@code mvn install} works from a checkout that has no server build), unless the
   * property {@code preemptd.requireServer} is true (CI), which makes its absence a failure.
   */
  static Path binary() {
    String env = System.getenv("PREEMPTD_BIN");
    Path bin =
        env != null && !env.isEmpty()
            ? Path.of(env)
            : repoRoot().resolve("target").resolve("debug").resolve("preemptd");
    if (!Files.isExecutable(bin)) {
      String message =
          "preemptd binary "
              + bin
              + " not found: the tests against the real server are skipped (run `cargo build`"
              + " or set PREEMPTD_BIN to run them)";
      if (Boolean.getBoolean("preemptd.requireServer")) {
        throw new IllegalStateException(message);
      }
      Assumptions.abort(message);
    }
    return bin;
  }

  /** Starts a server on 127.0.0.1:0 with extra flags; the bound address is from its log. */
  static PreemptdServer start(String... extraArgs) throws Exception {
    PreemptdServer server = new PreemptdServer(List.of(extraArgs));
    server.startOn("127.0.0.1:0");
    return server;
  }

  String address() {
    return address;
  }

  private void startOn(String listen) throws Exception {
    List<String> command = new ArrayList<>();
    command.add(binary().toString());
    command.addAll(
        List.of(
            "serve", "--listen", listen, "--metrics-listen", "off", "--log-format", "json"));
    command.addAll(extraArgs);
    ProcessBuilder builder = new ProcessBuilder(command);
    builder.environment().put("RUST_LOG", "info");
    builder.redirectOutput(ProcessBuilder.Redirect.DISCARD);
    process = builder.start();
    CompletableFuture<String> bound = new CompletableFuture<>();
    Process p = process;
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader lines =
                  new BufferedReader(
                      new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = lines.readLine()) != null) {
                  if (!bound.isDone() && line.startsWith("{")) {
                    JsonNode fields = JSON.readTree(line).path("fields");
                    if ("serving".equals(fields.path("message").asText())) {
                      bound.complete(fields.path("addr").asText());
                    }
                  }
                }
              } catch (IOException e) {
                bound.completeExceptionally(e);
              }
              bound.completeExceptionally(new IllegalStateException("preemptd exited before serving"));
            },
            "preemptd-log");
    reader.setDaemon(true);
    reader.start();
    address = bound.get(30, TimeUnit.SECONDS);
  }

  /** SIGTERM, then wait: the server drains and exits 0. */
  void stop() throws Exception {
    if (process == null) {
      return;
    }
    process.destroy();
    if (!process.waitFor(20, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new IllegalStateException("preemptd did not exit within 20s of SIGTERM");
    }
    int code = process.exitValue();
    process = null;
    if (code != 0) {
      throw new IllegalStateException("preemptd exited with " + code + " after SIGTERM");
    }
  }

  /** Stops the server and starts a new one on the same address. */
  void restart() throws Exception {
    String previous = address;
    stop();
    startOn(previous);
    if (!previous.equals(address)) {
      throw new IllegalStateException("restarted on " + address + ", want " + previous);
    }
  }

  @Override
  public void close() throws Exception {
    stop();
  }
}

package io.github.preemptd.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.preemptd.client.PreemptdClient.PreemptOptions;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import preemptd.v1.PreemptionGrpc;
import preemptd.v1.Preemptd.Outcome;
import preemptd.v1.Preemptd.PreemptRequest;
import preemptd.v1.Preemptd.PreemptResponse;

/**
 * The retry and deadline contract every preemptd client follows (docs/clients.md): 5 attempts,
 * 50 ms backoff doubling to 2 s, retries on UNAVAILABLE and RESOURCE_EXHAUSTED only, one
 * deadline over the call and its retries, timeouts of 0 or less refused. Checked against an
 * in-process server that answers what each test needs and counts the calls; needs no preemptd
 * binary.
 */
class ContractTest {
  /** Answers Preempt with the scripted codes in order, then with a decision. */
  static final class Scripted extends PreemptionGrpc.PreemptionImplBase {
    final List<Status.Code> codes = Collections.synchronizedList(new ArrayList<>());
    final AtomicInteger calls = new AtomicInteger();

    @Override
    public void preempt(PreemptRequest request, StreamObserver<PreemptResponse> response) {
      calls.incrementAndGet();
      if (!codes.isEmpty()) {
        Status.Code code = codes.remove(0);
        response.onError(Status.fromCode(code).withDescription("scripted " + code).asRuntimeException());
        return;
      }
      response.onNext(
          PreemptResponse.newBuilder().setOutcome(Outcome.OUTCOME_FITS).setEpoch("scripted").build());
      response.onCompleted();
    }
  }

  private final List<AutoCloseable> cleanups = new ArrayList<>();
  private static final String POD = "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}}";

  @AfterEach
  void cleanUp() throws Exception {
    for (AutoCloseable c : cleanups) {
      c.close();
    }
  }

  private Scripted scripted(PreemptdClient.Builder[] builder, Status.Code... codes) throws Exception {
    Scripted service = new Scripted();
    service.codes.addAll(List.of(codes));
    Server server =
        Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
            .addService(service)
            .build()
            .start();
    cleanups.add(() -> server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    builder[0] = PreemptdClient.builder("127.0.0.1:" + server.getPort());
    return service;
  }

  private PreemptdClient build(PreemptdClient.Builder builder) {
    PreemptdClient client = builder.build();
    cleanups.add(client);
    return client;
  }

  @ParameterizedTest
  @EnumSource(
      value = Status.Code.class,
      names = {"UNAVAILABLE", "RESOURCE_EXHAUSTED"})
  void unavailableAndResourceExhaustedAreRetried(Status.Code code) throws Exception {
    PreemptdClient.Builder[] b = new PreemptdClient.Builder[1];
    Scripted service = scripted(b, code, code);
    assertEquals("scripted", build(b[0]).preemptJson(POD, PreemptOptions.DRY_RUN).getEpoch());
    assertEquals(3, service.calls.get());
  }

  @Test
  void otherCodesAreNotRetried() throws Exception {
    PreemptdClient.Builder[] b = new PreemptdClient.Builder[1];
    Scripted service = scripted(b, Status.Code.INVALID_ARGUMENT);
    PreemptdClient client = build(b[0]);
    StatusRuntimeException e =
        assertThrows(StatusRuntimeException.class, () -> client.preemptJson(POD, PreemptOptions.DRY_RUN));
    assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
    assertEquals(1, service.calls.get());
  }

  @Test
  void attemptsAreBoundedByTheDefaultFive() throws Exception {
    PreemptdClient.Builder[] b = new PreemptdClient.Builder[1];
    Status.Code[] codes = new Status.Code[7];
    java.util.Arrays.fill(codes, Status.Code.UNAVAILABLE);
    Scripted service = scripted(b, codes);
    PreemptdClient client = build(b[0]);
    StatusRuntimeException e =
        assertThrows(StatusRuntimeException.class, () -> client.preemptJson(POD, PreemptOptions.DRY_RUN));
    assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode());
    assertEquals(5, service.calls.get());
  }

  @Test
  void theDeadlineCoversTheRetriesAndCanBeSetPerCall() throws Exception {
    PreemptdClient.Builder[] b = new PreemptdClient.Builder[1];
    Status.Code[] codes = new Status.Code[1000];
    java.util.Arrays.fill(codes, Status.Code.UNAVAILABLE);
    Scripted service = scripted(b, codes);
    // Were the timeout per attempt, 1000 attempts 200 ms apart would take over 3 minutes.
    PreemptdClient client =
        build(b[0].maxAttempts(1000).backoff(Duration.ofMillis(200), Duration.ofMillis(200)));
    long started = System.nanoTime();
    assertThrows(
        StatusRuntimeException.class,
        () -> client.withCallTimeout(Duration.ofSeconds(1)).preemptJson(POD, PreemptOptions.DRY_RUN));
    assertTrue(System.nanoTime() - started < Duration.ofSeconds(30).toNanos());
    assertTrue(service.calls.get() < 1000, () -> service.calls.get() + " calls");
  }

  @Test
  void timeoutsOfZeroOrLessAreRefused() {
    PreemptdClient.Builder builder = PreemptdClient.builder("127.0.0.1:1");
    assertThrows(IllegalArgumentException.class, () -> builder.callTimeout(Duration.ZERO));
    assertThrows(IllegalArgumentException.class, () -> builder.callTimeout(Duration.ofSeconds(-1)));
    PreemptdClient client = build(builder);
    assertThrows(IllegalArgumentException.class, () -> client.withCallTimeout(Duration.ZERO));
  }

  @Test
  void unavailableNamesTheAddress() throws Exception {
    int port;
    try (ServerSocket socket = new ServerSocket(0)) {
      port = socket.getLocalPort();
    }
    PreemptdClient client =
        build(
            PreemptdClient.builder("127.0.0.1:" + port)
                .maxAttempts(1)
                .callTimeout(Duration.ofSeconds(5)));
    StatusRuntimeException e =
        assertThrows(StatusRuntimeException.class, client::listNominations);
    assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode());
    assertTrue(
        e.getStatus().getDescription().contains("preemptd at 127.0.0.1:" + port),
        e.getStatus()::getDescription);
  }
}

package io.github.preemptd.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import preemptd.v1.Preemptd.Container;
import preemptd.v1.Preemptd.ListNominationsResponse;
import preemptd.v1.Preemptd.Node;
import preemptd.v1.Preemptd.NominationEventType;
import preemptd.v1.Preemptd.Pod;
import preemptd.v1.Preemptd.SyncRequest;
import preemptd.v1.Preemptd.SyncResponse;
import preemptd.v1.Preemptd.WatchNominationsResponse;

/** Watch resume, the OUT_OF_RANGE re-list and the epoch change, against real servers. */
class WatchTest {
  /** A node and n pending pods nominated to it: each pod is one NOMINATED event. */
  static List<SyncRequest> nominatedPods(String prefix, int n) {
    List<SyncRequest> items = new ArrayList<>();
    items.add(
        KubernetesObjects.item(
            Node.newBuilder()
                .setName("node-w")
                .putAllocatable("cpu", "4")
                .putAllocatable("memory", "8Gi")
                .putAllocatable("pods", "110")
                .build()));
    for (int i = 0; i < n; i++) {
      items.add(
          KubernetesObjects.item(
              Pod.newBuilder()
                  .setNamespace("watch")
                  .setName(String.format("%s-%05d", prefix, i))
                  .setUid(String.format("%s-uid-%05d", prefix, i))
                  .setPriority(10)
                  .setNominatedNodeName("node-w")
                  .setPhase("Pending")
                  .addContainers(Container.newBuilder().setName("c").putRequests("cpu", "1"))
                  .build()));
    }
    return items;
  }

  /** Collects a watch's events, relists and resumes. */
  static final class Recorder implements NominationWatch.Handler {
    final List<WatchNominationsResponse> events = new ArrayList<>();
    final List<ListNominationsResponse> relists = new ArrayList<>();
    final List<Throwable> resumes = new ArrayList<>();
    final CountDownLatch gate;

    Recorder(CountDownLatch gate) {
      this.gate = gate;
    }

    @Override
    public void onEvent(WatchNominationsResponse event) throws Exception {
      if (gate != null) {
        gate.await();
      }
      synchronized (this) {
        events.add(event);
      }
    }

    @Override
    public synchronized void onRelist(ListNominationsResponse list) {
      relists.add(list);
    }

    @Override
    public synchronized void onResumed(Throwable cause, long revision) {
      resumes.add(cause);
    }

    void waitFor(String what, BooleanSupplier condition) throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (true) {
        synchronized (this) {
          if (condition.getAsBoolean()) {
            return;
          }
        }
        if (System.nanoTime() > deadline) {
          fail("timed out waiting for " + what);
        }
        Thread.sleep(20);
      }
    }
  }

  /**
   * A watcher that stalls is cut off (RESOURCE_EXHAUSTED with --subscriber-buffer 1) and resumes
   * from the last revision it received: it sees every revision once, in order.
   */
  @Test
  void resumesAfterCutOff() throws Exception {
    try (PreemptdServer server = PreemptdServer.start("--subscriber-buffer", "1");
        // A fixed HTTP/2 window (no automatic growth) so a stalled reader backs up into the
        // server's per-watcher queue.
        PreemptdClient client =
            PreemptdClient.builder(server.address())
                .channelCustomizer(b -> ((NettyChannelBuilder) b).flowControlWindow(65535))
                .build()) {
      CountDownLatch gate = new CountDownLatch(1);
      Recorder rec = new Recorder(gate);
      long finalRevision;
      try (NominationWatch watch = client.watchNominations(0, rec)) {
        Thread.sleep(200);
        int pods = 3000;
        SyncResponse report = client.sync(nominatedPods("cut", pods));
        assertEquals(0, report.getRejected(), () -> "rejected " + report.getRejectionsList());
        finalRevision = report.getNominationsRevision();
        assertTrue(finalRevision >= pods, "nominations revision " + finalRevision);
        gate.countDown();
        rec.waitFor(
            "revision " + finalRevision,
            () ->
                !rec.events.isEmpty()
                    && rec.events.get(rec.events.size() - 1).getRevision() >= finalRevision);
        assertNull(watch.failure());
        assertTrue(watch.isRunning());
      }
      synchronized (rec) {
        long cutOff =
            rec.resumes.stream()
                .filter(
                    e ->
                        e instanceof StatusRuntimeException s
                            && s.getStatus().getCode() == Status.Code.RESOURCE_EXHAUSTED)
                .count();
        assertTrue(cutOff > 0, "the watcher was never cut off: " + rec.resumes);
        assertTrue(rec.relists.isEmpty(), "resumed by relisting, want resuming from the history");
        long first = rec.events.get(0).getRevision();
        for (int i = 0; i < rec.events.size(); i++) {
          WatchNominationsResponse e = rec.events.get(i);
          assertEquals(first + i, e.getRevision(), "event " + i + " (missed or repeated)");
          assertEquals(NominationEventType.NOMINATION_EVENT_TYPE_NOMINATED, e.getType());
        }
        assertEquals(finalRevision, rec.events.get(rec.events.size() - 1).getRevision());
      }
    }
  }

  /**
   * Resuming from a revision the history no longer holds (--history-capacity 2) is OUT_OF_RANGE:
   * the watch re-lists and continues from the list's revision.
   */
  @Test
  void relistsOnOutOfRange() throws Exception {
    try (PreemptdServer server = PreemptdServer.start("--history-capacity", "2");
        PreemptdClient client = PreemptdClient.connect(server.address())) {
      int pods = 10;
      long listRevision = client.sync(nominatedPods("oor", pods)).getNominationsRevision();
      Recorder rec = new Recorder(null);
      try (NominationWatch watch = client.watchNominations(1, rec)) {
        rec.waitFor("a relist", () -> !rec.relists.isEmpty());
        synchronized (rec) {
          ListNominationsResponse list = rec.relists.get(0);
          assertEquals(listRevision, list.getRevision());
          assertEquals(pods, list.getNominationsCount());
          assertTrue(rec.events.isEmpty(), "events before the relist: " + rec.events);
        }
        client.deletePod("watch", "oor-00000");
        rec.waitFor("the event after the relist", () -> !rec.events.isEmpty());
        synchronized (rec) {
          WatchNominationsResponse e = rec.events.get(0);
          assertEquals(listRevision + 1, e.getRevision());
          assertEquals(NominationEventType.NOMINATION_EVENT_TYPE_CLEARED, e.getType());
          assertEquals("oor-00000", e.getPod().getName());
        }
        assertNull(watch.failure());
      }
    }
  }

  /**
   * A server restarted on the same address has a new epoch: the listener fires on the first
   * response from it, and a running watch re-lists from the new server.
   */
  @Test
  void epochChangeOnRestart() throws Exception {
    List<String[]> changes = new ArrayList<>();
    try (PreemptdServer server = PreemptdServer.start();
        PreemptdClient client =
            PreemptdClient.builder(server.address())
                .maxAttempts(40)
                .backoff(Duration.ofMillis(50), Duration.ofMillis(250))
                .callTimeout(Duration.ofSeconds(30))
                .onEpochChange(
                    (previous, current) -> {
                      synchronized (changes) {
                        changes.add(new String[] {previous, current});
                      }
                    })
                .build()) {
      client.sync(nominatedPods("epoch", 3));
      String before = client.epoch();
      assertNotEquals("", before);
      Recorder rec = new Recorder(null);
      try (NominationWatch watch = client.watchNominations(0, rec)) {
        rec.waitFor("the initial nominations", () -> rec.events.size() == 3);

        server.restart();
        // Retried on UNAVAILABLE until the new server answers.
        ListNominationsResponse list = client.listNominations();
        assertNotEquals(before, list.getEpoch(), "epoch unchanged by the restart");
        synchronized (changes) {
          assertEquals(1, changes.size(), "epoch changes");
          assertEquals(before, changes.get(0)[0]);
          assertEquals(list.getEpoch(), changes.get(0)[1]);
        }
        rec.waitFor("the watch's relist from the new server", () -> !rec.relists.isEmpty());
        synchronized (rec) {
          ListNominationsResponse relist = rec.relists.get(0);
          assertEquals(list.getEpoch(), relist.getEpoch());
          assertEquals(0, relist.getNominationsCount());
        }
        client.sync(nominatedPods("after", 1));
        rec.waitFor(
            "an event from the new server",
            () -> {
              WatchNominationsResponse last = rec.events.get(rec.events.size() - 1);
              return last.getEpoch().equals(list.getEpoch())
                  && last.getPod().getName().equals("after-00000");
            });
        assertNull(watch.failure());
      }
    }
  }
}

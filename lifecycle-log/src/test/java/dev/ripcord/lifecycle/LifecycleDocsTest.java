package dev.ripcord.lifecycle;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** docs/lifecycles.md documents every lifecycle event type and every field of the wire form. */
class LifecycleDocsTest {

    private static String section() throws IOException {
        String doc = Files.readString(Path.of("..", "docs", "lifecycles.md"));
        int start = doc.indexOf("## The lifecycle log");
        assertThat(start).as("docs/lifecycles.md has a section '## The lifecycle log'").isNotNegative();
        int end = doc.indexOf("\n## ", start + 1);
        return doc.substring(start, end < 0 ? doc.length() : end);
    }

    @Test
    void everyEventTypeIsDocumented() throws IOException {
        String section = section();
        for (LifecycleEventType type : LifecycleEventType.values()) {
            assertThat(section).as("event type %s", type).contains("`" + type.name() + "`");
        }
    }

    @Test
    void everyFieldOfTheWireFormIsDocumented() throws IOException {
        String section = section();
        for (var component : LifecycleEvent.class.getRecordComponents()) {
            assertThat(section).as("field %s", component.getName()).contains("`" + component.getName() + "`");
        }
    }
}

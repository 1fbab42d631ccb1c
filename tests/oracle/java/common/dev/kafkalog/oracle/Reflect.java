package dev.kafkalog.oracle;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

/**
 * Reaches what Kafka keeps private but the contract needs: a field with no accessor ({@code LogAppendInfo}'s
 * {@code lastOffsetOfFirstBatch}) and package-private methods of the storage module (4.x's
 * {@code LogCleanerManager.cleanableOffsets}).  The jars are on the class path (the unnamed module), so
 * {@code setAccessible} is allowed.
 */
public final class Reflect {
    private Reflect() {
    }

    @SuppressWarnings("unchecked")
    public static <T> T field(Object target, String name) {
        try {
            Field field = target.getClass().getDeclaredField(name);
            field.setAccessible(true);
            return (T) field.get(target);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("no field " + name + " in " + target.getClass().getName(), e);
        }
    }

    /**
     * Calls a declared (maybe private or package-private) method; what the method throws comes out unwrapped.
     *
     * @param target the object, or null for a static method of {@code owner}
     */
    @SuppressWarnings("unchecked")
    public static <T> T call(Class<?> owner, Object target, String name, Class<?>[] types, Object... args)
            throws Exception {
        Method method;
        try {
            method = owner.getDeclaredMethod(name, types);
            method.setAccessible(true);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("no method " + name + " in " + owner.getName(), e);
        }
        try {
            return (T) method.invoke(target, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception exception) {
                throw exception;
            }
            if (cause instanceof Error error) {
                throw error;
            }
            throw e;
        }
    }
}

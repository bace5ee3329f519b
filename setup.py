"""The one thing pyproject.toml cannot say without an experimental table: the Spark source's
C range reader (lagless/spark/connector/native_fetch.py). It is optional: where it does not compile
(no C compiler), lagless installs all the same and reads Kafka in Spark tasks through
confluent-kafka's Python API, and says so in the task's log."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "lagless.spark.connector._rangeread",
            sources=["src/lagless/spark/connector/_rangeread.c"],
            depends=[
                f"src/lagless/spark/connector/{h}"
                for h in ("_arrowbuf.h", "_rdkafka.h", "_rkheaders.h", "_rklog.h")
            ],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)

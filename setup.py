"""The one thing pyproject.toml cannot say without an experimental table: lagless's two C
modules, both optional. Where they do not compile (no C compiler), lagless installs all the same
and says so where it would have used them:

- the Spark source's range reader (lagless/spark/connector/native_fetch.py): Spark tasks then read
  Kafka through confluent-kafka's Python API;
- the engine's record fetcher (lagless/kafka/fetcher.py): ``lagless consume``
  then fetches through confluent-kafka's consumer.
"""

from setuptools import Extension, setup

SHARED = [
    f"src/lagless/kafka/{h}" for h in ("_rdkafka.h", "_rkclient.h", "_rkheaders.h", "_rklog.h")
]

setup(
    ext_modules=[
        Extension(
            "lagless.spark.connector._rangeread",
            sources=["src/lagless/spark/connector/_rangeread.c"],
            depends=["src/lagless/spark/connector/_arrowbuf.h", *SHARED],
            include_dirs=["src/lagless/kafka"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "lagless.kafka._fetch",
            sources=["src/lagless/kafka/_fetch.c"],
            depends=SHARED,
            include_dirs=["src/lagless/kafka"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ]
)

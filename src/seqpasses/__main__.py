from seqpasses.program import run

if __name__ == "__main__":
    run()

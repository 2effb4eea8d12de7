this is not a protobuf at all
